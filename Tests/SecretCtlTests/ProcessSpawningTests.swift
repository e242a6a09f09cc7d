import Glibc
import ProcessSpawning
import Testing

@Suite struct ProcessSpawningTests {
    @Test("a child gets the descriptors it is given and no other, even one opened without close-on-exec")
    func onlyGivenDescriptors() throws {
        // A descriptor as a C library may leave one (libtss2's TPM connection): open and
        // inherited on exec. F_DUPFD does not set close-on-exec.
        let opened = open("/dev/null", O_RDONLY)
        try #require(opened >= 0)
        let leaky = fcntl(opened, F_DUPFD, 200)
        close(opened)
        try #require(leaky >= 200)
        defer { close(leaky) }
        try #require(fcntl(leaky, F_GETFD) & FD_CLOEXEC == 0)

        var ends: [Int32] = [0, 0]
        try #require(pipe(&ends) == 0)
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        // Descriptor 5 is given, 3 and 4 lie below it and are not, `leaky` is the parent's.
        let script = "for fd in 3 4 5 \(leaky); do if [ -e /proc/self/fd/$fd ]; then echo $fd open; "
            + "else echo $fd closed; fi; done; echo given >&5"
        let spawned = ProcessSpawning.spawn(
            ["sh", "-c", script], environment: ["PATH": "/usr/bin:/bin"], descriptors: [(1, ends[1]), (5, ends[1])])
        close(ends[1])
        let pid = try spawned.get()
        var output: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 512)
        while true {
            let count = read(ends[0], &chunk, chunk.count)
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { break }
            output += chunk[..<count]
        }
        close(ends[0])
        #expect(ProcessSpawning.waitForExit(pid) == 0)
        #expect(String(decoding: output, as: UTF8.self) == "3 closed\n4 closed\n5 open\n\(leaky) closed\ngiven\n")
    }
}
