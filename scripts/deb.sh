#!/bin/bash
# make deb: the Debian packages (debian/) for each release named, built with dpkg-buildpackage
# inside a clean root of that release, so that each links that release's libraries
# (dpkg-shlibdeps computes Depends from them), then checked with lintian inside the same root.
#     scripts/deb.sh trixie bookworm
# Writes .build/deb/RELEASE/: the .deb files, the .changes and .buildinfo, lintian.txt (lintian's
# output) and contents.txt (each package's files and Depends); logs in .build/deb/logs/. With
# DEB_NEWER_SECRETD set (make e2e sets it), also newer/secretd: see newer_secretd.
#
# The build root (buildd variant, debian/control's Build-Depends, lintian) is cached outside the
# clone (scripts/release-root.sh). The Swift toolchain is the one on PATH (SWIFT), mounted
# read-only into the root at the same path: Debian 12 has no Swift, and Debian 13's swiftlang
# 6.0.3 cannot build this code (see the Makefile's SWIFT_MINIMUM). The Swift runtime is linked
# statically (the Makefile's RELEASE), so the packages need no Swift on the user's machine.
#
# The package version is the programs' (Sources/KeychainCore/KeychainVersion.swift, which
# debian/changelog's top entry must carry), plus +debN for the release built for, so that the
# two releases' packages differ and an upgrade from Debian 12 to 13 takes the newer one.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
out=$repo/.build/deb
logs=$out/logs
# shellcheck source=release-root.sh
. "$repo/scripts/release-root.sh"

[ "$(id -u)" -eq 0 ] || { echo "deb.sh: run as root (mmdebstrap, systemd-nspawn)" >&2; exit 1; }
[ $# -gt 0 ] || { echo "usage: deb.sh RELEASE..." >&2; exit 2; }
swift=$(command -v "${SWIFT:-swift}") || { echo "deb.sh: no '${SWIFT:-swift}' on PATH" >&2; exit 1; }
# The toolchain's usr directory (…/usr/bin/swift), mounted whole.
toolchain=$(dirname "$(dirname "$(realpath "$swift")")")
mkdir -p "$logs"

seconds_since() { awk -v s="$1" -v e="$(date +%s.%N)" 'BEGIN { printf "%.0f", e - s }'; }

# ---- build root (begin): this section and debian/control's source paragraph (Build-Depends)
# are the build root's cache key
# build_root RELEASE TARGET: a buildd root with debian/control's Build-Depends and lintian.
build_root() {
    release_mmdebstrap "$1" "$2" --variant=buildd --include=lintian \
        --customize-hook="copy-in $repo/debian/control $repo/debian/changelog /tmp" \
        --customize-hook='mkdir -p "$1/tmp/source/debian" && mv "$1/tmp/control" "$1/tmp/changelog" "$1/tmp/source/debian/"' \
        --customize-hook='chroot "$1" env DEBIAN_FRONTEND=noninteractive apt-get build-dep -y --no-install-recommends /tmp/source' \
        --customize-hook='rm -rf "$1/tmp/source"; chroot "$1" apt-get clean'
}
# ---- build root (end)

# The programs' version, and the check that debian/changelog carries it.
version=$(sed -n 's/.*static let current = "\(.*\)".*/\1/p' "$repo/Sources/KeychainCore/KeychainVersion.swift")
changelog_version=$(dpkg-parsechangelog -l "$repo/debian/changelog" -SVersion)
if [ "$changelog_version" != "$version" ]; then
    echo "deb.sh: debian/changelog's top entry is $changelog_version, the programs' version (KeychainVersion.swift) $version: add an entry for $version" >&2
    exit 1
fi

# source_tree DIRECTORY: the tree as git sees it (tracked files and new ones not ignored, as they
# are in the work tree, so uncommitted changes are built too), without .build or .git.
source_tree() {
    mkdir -p "$1"
    git -C "$repo" ls-files -z --cached --others --exclude-standard --deduplicate |
        while IFS= read -r -d '' file; do [ -e "$repo/$file" ] && printf '%s\0' "$file"; done |
        tar -C "$repo" --null -T - -cf - | tar -C "$1" -xf -
}

# release_entry CHANGELOG RELEASE NUMBER: a changelog entry on top, for the release built for,
# dated now (the packages' files get that time).
release_entry() {
    local changelog=$1 release=$2 number=$3 maintainer date
    maintainer=$(dpkg-parsechangelog -l "$changelog" -SMaintainer)
    date=$(date -R)
    {
        printf 'secretd (%s+deb%s) %s; urgency=medium\n\n' "$version" "$number" "$release"
        printf '  * Built for Debian %s (%s) by make deb.\n\n' "$number" "$release"
        printf ' -- %s  %s\n\n' "$maintainer" "$date"
        cat "$changelog"
    } >"$changelog.new"
    mv "$changelog.new" "$changelog"
}

# in_root ROOT COMMAND...: COMMAND in ROOT (systemd-nspawn, no network), in /build/secretd, with
# the toolchain mounted and first on PATH.
in_root() {
    local root=$1
    shift
    systemd-nspawn -q -D "$root" --register=no --keep-unit --private-network --bind-ro="$toolchain" \
        --setenv=PATH="$toolchain/bin:/usr/sbin:/usr/bin:/sbin:/bin" --setenv=HOME=/build --setenv=LANG=C.UTF-8 \
        --chdir=/build/secretd "$@"
}

build() {
    local release=$1 number key tar start dir
    number=$(release_number "$release")
    start=$(date +%s.%N)
    key=$(section_key "$0" "build root" <(sed '/^$/q' "$repo/debian/control"))
    tar=$(cached_root "build-$release" "$key" "$logs/root-$release.log" build_root "$release")
    echo "deb.sh: $release: build root ready after $(seconds_since "$start") s"

    work=$(mktemp -d /var/tmp/secretd-deb-"$release".XXXXXX)
    start=$(date +%s.%N)
    mkdir "$work/root"
    tar -C "$work/root" -xf "$tar"
    source_tree "$work/root/build/secretd"
    release_entry "$work/root/build/secretd/debian/changelog" "$release" "$number"
    echo "deb.sh: $release: root extracted, source copied in $(seconds_since "$start") s"

    start=$(date +%s.%N)
    echo "deb.sh: $release: dpkg-buildpackage (log: $logs/build-$release.log)"
    if ! in_root "$work/root" dpkg-buildpackage -us -uc -b >"$logs/build-$release.log" 2>&1; then
        echo "deb.sh: $release: dpkg-buildpackage failed; the end of $logs/build-$release.log:" >&2
        tail -n 30 "$logs/build-$release.log" >&2
        return 1
    fi
    echo "deb.sh: $release: built in $(seconds_since "$start") s"

    dir=$out/$release
    rm -rf "$dir"
    mkdir -p "$dir"
    cp "$work/root/build/"*.deb "$work/root/build/"*.changes "$work/root/build/"*.buildinfo "$dir/"

    # lintian of that release, on what was built: every tag shown (-I: info too, overrides
    # listed); errors and warnings fail the build.
    start=$(date +%s.%N)
    if in_root "$work/root" sh -c "lintian -I --show-overrides --color never --hyperlinks off --fail-on error,warning /build/secretd_$version+deb${number}_*.changes" \
        >"$dir/lintian.txt" 2>&1; then
        echo "deb.sh: $release: lintian: no errors or warnings ($(grep -c . "$dir/lintian.txt") lines in $dir/lintian.txt, $(seconds_since "$start") s)"
    else
        echo "deb.sh: $release: lintian found errors or warnings:" >&2
        cat "$dir/lintian.txt" >&2
        return 1
    fi
    contents "$dir" >"$dir/contents.txt"
    hardened "$dir" || return 1
    ls -l "$dir"/*.deb
    if [ -n "${DEB_NEWER_SECRETD:-}" ]; then newer_secretd "$release" || return 1; fi
    rm -rf --one-file-system "$work"
    work=""
}

# newer_secretd RELEASE: for make e2e's package downgrade (DEB_NEWER_SECRETD set), secretd built
# again in the same root as a newer secretd would be: this version's source with one schema
# migration more (Migrations+Unreleased.swift replaced by one step that adds an empty table).
# Only what depends on SecretStore is compiled again. Writes the stripped program to
# .build/deb/RELEASE/newer/secretd; scripts/e2e.sh packages it as a version above this one.
newer_secretd() {
    local release=$1 start
    start=$(date +%s.%N)
    cat >"$work/root/build/secretd/Sources/SecretStore/Migrations+Unreleased.swift" <<'SWIFT'
extension Migrations {
    /// make e2e's newer secretd (scripts/deb.sh): one step more than this version has.
    static let unreleased: [Step] = [.sql("CREATE TABLE e2e_newer_schema (id INTEGER PRIMARY KEY);")]
}
SWIFT
    if ! in_root "$work/root" sh -c 'make release DEPS_PACKAGES= && strip -o /build/secretd-newer "$(swift build -c release --show-bin-path)/secretd"' \
        >"$logs/newer-$release.log" 2>&1; then
        echo "deb.sh: $release: the newer secretd failed to build; the end of $logs/newer-$release.log:" >&2
        tail -n 30 "$logs/newer-$release.log" >&2
        return 1
    fi
    install -D -m755 "$work/root/build/secretd-newer" "$out/$release/newer/secretd"
    echo "deb.sh: $release: the newer secretd (one schema migration more, for make e2e) built in $(seconds_since "$start") s"
}

# contents DIRECTORY: each package's control fields that matter and its files.
contents() {
    local deb
    for deb in "$1"/*.deb; do
        echo "== $(basename "$deb")"
        dpkg-deb -f "$deb" Package Version Depends Recommends Suggests
        dpkg-deb -c "$deb" | awk '{ print $1, $6, $7, $8 }'
        echo
    done
}

# hardened DIRECTORY: every ELF file in the packages is PIE with full RELRO (relro and now),
# as hardening-check sees them.
hardened() {
    local tmp deb file report bad=""
    tmp=$(mktemp -d)
    for deb in "$1"/*.deb; do dpkg-deb -x "$deb" "$tmp"; done
    while IFS= read -r file; do
        report=$(hardening-check --nofortify --nostackprotector --nocfprotection "$file" 2>&1) || bad="$bad\n$report"
    done < <(find "$tmp" -type f -exec sh -c 'head -c 4 "$1" | grep -q "^.ELF"' _ {} \; -print)
    rm -rf "$tmp"
    [ -z "$bad" ] && { echo "deb.sh: hardening-check: PIE, RELRO and BIND_NOW on every program and library"; return 0; }
    printf "deb.sh: hardening-check:%b\n" "$bad" >&2
    return 1
}

# The root of the build under way, removed however the script ends.
work=""
trap '[ -n "$work" ] && rm -rf --one-file-system "$work"' EXIT
for release in "$@"; do
    build "$release"
done
