import FoundationEssentials
import KeychainCore
import Glibc
import Keychain

/// What each verb does, once its command line is parsed.
enum Commands {
    static func run(_ verb: String, _ parsed: ParsedCommand) throws(CommandLineError) {
        switch verb {
        case "completions":
            guard let script = Completions.script(for: parsed.arguments["SHELL"]!, SecretCtl.commands) else {
                throw .usage("completions are available for bash, zsh and fish", command: verb)
            }
            Terminal.writeOutput(script)
        default:
            throw .usage("unknown command '\(verb)'", command: nil)
        }
    }
}
