# Roots of Debian releases for make deb (a build root per release) and make e2e (a system to boot
# per release), sourced by scripts/deb.sh and scripts/e2e.sh. Each root is made by mmdebstrap from
# Debian's archive only and kept as a tar file in a cache outside the clone, so that CI, which
# starts from a fresh clone, finds it; it is made again by itself when its definition changed
# (the key in its name) or when it is older than RELEASE_ROOT_DAYS (so that Debian's updates
# arrive). Bash; root only.

RELEASE_CACHE=${SECRETD_BUILD_CACHE:-/var/cache/secretd-build}
RELEASE_ROOT_DAYS=7

# release_number RELEASE: Debian's number of a release name (bookworm 12, trixie 13).
release_number() {
    case $1 in
    bookworm) echo 12 ;;
    trixie) echo 13 ;;
    *) echo "release-root: unknown Debian release '$1' (bookworm or trixie)" >&2; return 1 ;;
    esac
}

# release_sources RELEASE: the apt sources mmdebstrap takes, one a line: the release, its
# updates and its security updates.
release_sources() {
    printf '%s\n' "deb http://deb.debian.org/debian $1 main" \
        "deb http://deb.debian.org/debian $1-updates main" \
        "deb http://deb.debian.org/debian-security $1-security main"
}

# release_mmdebstrap RELEASE TARGET OPTION...: mmdebstrap of RELEASE into TARGET (a tar file)
# with the options given, without documentation (path-exclude: smaller and faster roots).
release_mmdebstrap() {
    local release=$1 target=$2 sources
    shift 2
    mapfile -t sources < <(release_sources "$release")
    mmdebstrap --variant=minbase --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/locale/*' \
        --dpkgopt='path-exclude=/usr/share/info/*' "$@" "$release" "$target" "${sources[@]}"
}

# cached_root NAME KEY LOG BUILD...: prints the path of the cached root NAME for KEY
# ($RELEASE_CACHE/NAME-KEY.tar), running BUILD... TARGET (output to LOG) to make it when it is
# missing or stale; other keys' roots of NAME are removed. Says on stderr which it was.
cached_root() {
    local name=$1 key=$2 log=$3 tar tmp
    shift 3
    tar=$RELEASE_CACHE/$name-$key.tar
    mkdir -p "$RELEASE_CACHE"
    if [ -f "$tar" ] && [ -z "$(find "$tar" -mtime +"$RELEASE_ROOT_DAYS")" ]; then
        echo "release-root: $name: cached ($tar)" >&2
        echo "$tar"
        return 0
    fi
    echo "release-root: $name: making it with mmdebstrap (log: $log)" >&2
    tmp=$RELEASE_CACHE/.$name-$key.$$.tar
    if ! "$@" "$tmp" >"$log" 2>&1; then
        rm -f "$tmp"
        echo "release-root: $name: mmdebstrap failed; the end of $log:" >&2
        tail -n 20 "$log" >&2
        return 1
    fi
    rm -f "$RELEASE_CACHE/$name"-*.tar
    mv "$tmp" "$tar"
    echo "$tar"
}

# section_key FILE NAME [FILE...]: a key for the lines of FILE between "# ---- NAME (begin)" and
# "# ---- NAME (end)", and the whole of each further FILE: a root defined by them is made again
# when any of them changes.
section_key() {
    local file=$1 name=$2
    shift 2
    { sed -n "/^# ---- $name (begin)/,/^# ---- $name (end)/p" "$file"; cat "$@"; } | sha256sum | cut -c1-16
}
