// secretctl: everything is in the SecretCtl library target.

import Glibc
import SecretCtl

exit(SecretCtl.run(CommandLine.arguments))
