// secretctl: everything is in the SecretCtl library target.

import Foundation
import SecretCtl

exit(SecretCtl.run(CommandLine.arguments))
