"""What scripts/make-gnome-keyrings.py and scripts/make-kwallets.py share: the processes they
start (a private session bus, then the keyring daemon they write files with), stopped newest
first, and how they give up."""
import os
import subprocess


class Daemons:
    """The processes one script started; `script` names it in its errors."""

    def __init__(self, script):
        self.script = script
        self.procs = []  # Popen objects started; stop_all() ends them, newest first

    def die(self, msg):
        raise SystemExit(f"{self.script}: {msg}")

    @staticmethod
    def stop(p):
        if p.poll() is None:
            p.terminate()
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(5)

    def stop_all(self):
        while self.procs:
            self.stop(self.procs.pop())

    def start_bus(self, tmp, env):
        """A private session bus: socket in tmp, no service dirs (nothing gets auto-activated);
        its address. The caller's SIGALRM bounds the wait for it."""
        conf = os.path.join(tmp, "bus.conf")
        with open(conf, "w") as f:
            f.write(f"""<busconfig><type>session</type><listen>unix:path={tmp}/bus</listen>
<auth>EXTERNAL</auth><policy context="default"><allow send_destination="*" eavesdrop="true"/>
<allow eavesdrop="true"/><allow own="*"/></policy></busconfig>""")
        p = subprocess.Popen(["dbus-daemon", "--config-file=" + conf, "--nofork", "--nopidfile", "--print-address"],
                             stdout=subprocess.PIPE, stderr=open(tmp + "/bus.log", "w"), env=env, text=True)
        self.procs.append(p)
        addr = p.stdout.readline().strip()
        return addr or self.die("dbus-daemon did not start:\n" + open(tmp + "/bus.log").read())
