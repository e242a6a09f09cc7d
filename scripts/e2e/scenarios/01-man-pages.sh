# shellcheck shell=bash
# The man pages the packages install show: secretd(1), secretctl(1), secretd.conf(5), pam_secretd(8).
# boot: first
# needs: 

man_pages() {
    local page missing=""
    for page in 1:secretd 1:secretctl 5:secretd.conf 8:pam_secretd; do
        MANWIDTH=80 man "${page%%:*}" "${page#*:}" >/dev/null 2>&1 || missing="$missing ${page#*:}(${page%%:*})"
    done
    [ -z "$missing" ] && return 0
    echo "man does not show:$missing"
    return 1
}

scenario() {
    check "man shows secretd(1), secretctl(1), secretd.conf(5) and pam_secretd(8)" man_pages
}
