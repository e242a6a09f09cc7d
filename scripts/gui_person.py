# What the GUI tests' drivers share (scripts/seahorse-drive.py, scripts/answer-gcr-prompt.py):
# a person at a desktop under test, who sees widgets through the accessibility tree (AT-SPI,
# pyatspi; the test's VirtualDesktop runs the bus) and clicks and types with xdotool.
import subprocess
import time

import pyatspi


def application(*names):
    """The running program of one of these names on the accessibility bus, or None."""
    for app in pyatspi.Registry.getDesktop(0):
        if app is not None and app.name in names:
            return app
    return None


def walk(node, depth=0, found=None):
    """node and everything under it (40 levels at most)."""
    found = [] if found is None else found
    if node is None or depth > 40:
        return found
    found.append(node)
    try:
        children = list(node)
    except Exception:
        return found
    for child in children:
        walk(child, depth + 1, found)
    return found


def showing(node):
    try:
        return node.getState().contains(pyatspi.STATE_SHOWING)
    except Exception:
        return False


def role(name):
    """The role of this name in AT-SPI's specification ("push button", "password text"), as a
    number. Widgets are matched by that number: the names toolkits give (getRoleName) change
    between versions (at-spi2-core 2.46, Debian 12: "push button"; 2.56, Debian 13: "button")."""
    return getattr(pyatspi, "ROLE_" + name.upper().replace(" ", "_"))


def is_a(node, name):
    """Whether node has the role of this name (see role)."""
    return node.getRole() == role(name)


def all_of(root, role_name, name=None, contains=None, visible=True):
    """The widgets under root of this role (and name, or with contains in their name), shown
    on the screen unless visible is False."""
    result = []
    for node in walk(root):
        try:
            if not is_a(node, role_name):
                continue
            if name is not None and node.name != name:
                continue
            if contains is not None and contains not in node.name:
                continue
        except Exception:
            continue
        if visible and not showing(node):
            continue
        result.append(node)
    return result


def xdotool(*arguments):
    subprocess.run(["xdotool"] + list(arguments), check=True)


def click(node, button="1", repeat=1, x_offset=None, top=False):
    """Clicks the middle of node (x_offset from its left; top: its top edge, for a button a
    dialog shows only in part until scrolled)."""
    extents = node.queryComponent().getExtents(pyatspi.DESKTOP_COORDS)
    x = extents.x + (extents.width // 2 if x_offset is None else x_offset)
    y = extents.y + (4 if top else extents.height // 2)
    xdotool("mousemove", str(x), str(y), "click", "--repeat", str(repeat), button)
    time.sleep(0.5)


def type_text(text):
    xdotool("type", "--delay", "15", text)


def describe(root):
    """The tree under root, a widget a line (indented by depth): role (as the toolkit names
    it), name, and whether it is showing, for a failure's artifacts."""
    lines = []

    def visit(node, depth):
        if node is None or depth > 40:
            return
        try:
            lines.append("%s%s %r%s" % ("  " * depth, node.getRoleName(), node.name, "" if showing(node) else " (hidden)"))
            children = list(node)
        except Exception as error:
            lines.append("%s? %s" % ("  " * depth, error))
            return
        for child in children:
            visit(child, depth + 1)

    visit(root, 0)
    return "\n".join(lines)
