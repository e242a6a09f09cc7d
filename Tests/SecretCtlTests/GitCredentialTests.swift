import Foundation
import Testing

@testable import SecretCtl

@Suite struct GitCredentialTests {
    @Test("requests read as git reads them: CRLF ends a line, a blank line ends the request (found by fuzzing)")
    func requestLines() {
        #expect(GitCredential.parse("protocol=https\r\nhost=example.com\r\n\r\nusername=ignored\n")
                == ["protocol": "https", "host": "example.com"])
        // '=' followed by a combining mark is still the separator (a Character would hide it).
        #expect(GitCredential.parse("oauth_refresh_token=\u{301}t\npassword=a=b\r\r\n")
                == ["oauth_refresh_token": "\u{301}t", "password": "a=b\r"])
    }

    @Test("what store writes, get reads back: password, expiry and refresh token")
    func storeAndGet() throws {
        let request = GitCredential.parse("""
            protocol=https
            host=git.example.com:8443
            path=org/repo.git
            username=alice
            password=p\rq
            password_expiry_utc=1700000000
            oauth_refresh_token=r=1

            """)
        let item = try #require(GitCredential.itemToStore(for: request))
        #expect(item.attributes == ["protocol": "https", "server": "git.example.com", "port": "8443", "object": "org/repo.git",
                                    "user": "alice", "xdg:schema": GitCredential.schema])
        #expect(item.label == "Git: https://git.example.com:8443/org/repo.git")
        let stored = StoredSecret(decoding: item.secret.encoded)
        #expect(stored == item.secret)
        #expect(stored.isExpired(at: 1_700_000_000) && !stored.isExpired(at: 1_699_999_999))
        #expect(GitCredential.parse(GitCredential.reply(to: [:], storedUser: "alice", stored: stored)) == [
            "username": "alice", "password": "p\rq", "password_expiry_utc": "1700000000", "oauth_refresh_token": "r=1",
        ])
        #expect(GitCredential.itemToStore(for: ["protocol": "https", "host": "h", "username": "u"]) == nil)
        #expect(GitCredential.attributes(for: ["host": "h"]) == nil)
    }
}
