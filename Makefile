# make run      install what is missing, build, start secretd in the foreground (unlocked with a
#               password it asks for or reads on stdin; on a private session bus when none exists)
# make test     install what is missing, build, run every test, check the static release build,
#               then make leaks (1,000) and make fuzz
# make fuzz     build keychain-fuzz with libFuzzer (in .build/fuzz) and fuzz every parser of
#               outside input for FUZZ_SECONDS (10) each; fails on a crash (see README.md)
# make fuzz-dbus  random D-Bus calls at a throw-away secretd for DBUS_FUZZ_SECONDS (300)
# make crash-test  power cuts below the page cache: secretd's writes and syncs recorded under
#               load (an LD_PRELOAD shim), then CRASH_CUTS (2000) cut points replayed with
#               CRASH_STATES (10) states each, torn writes included, and every state checked
#               (PowerCutTests; make test runs 60 cut points of a shorter recording)
# make demo     run the library's example program against a throw-away secretd
# make bench    secretd against gnome-keyring and KeePassXC, in alternating rounds (SIZES="100 1000"
#               for a quick run; ROUNDS=3; PROVIDERS=...; PARTS=memory for the memory scenarios alone,
#               see bench/README.md)
# make bench-startup  start-up by D-Bus activation, locked keyring: secretd at 3,000 and 100,000
#               items against gnome-keyring at 3,000 (bench/startup.sh, bench/README.md)
# make leaks    secretd under AddressSanitizer/LeakSanitizer through 10,000 operations
#               (make test runs 1,000)
# make install  release build, then secretd, secretctl, man pages, systemd units, D-Bus activation file
#               and the files secretctl setup links over gnome-keyring's (share/secretd) under
#               $(DESTDIR)$(PREFIX); pam_secretd.so and its pam-auth-update profile where PAM
#               looks for them (PAMDIR, PAMCONFIGDIR), secretd.portal where xdg-desktop-portal
#               does (PORTALDIR)
# make pam      build the PAM module pam_secretd.so (C, libc and libpam only) into .build/pam
# make deb      Debian packages (debian/) for Debian 13 and 12 in .build/deb/trixie and
#               .build/deb/bookworm, each built in a clean root of its release and checked with
#               lintian (scripts/deb.sh; the roots are cached in /var/cache/secretd-build)
# make e2e      make deb, then the packages installed with apt on a booted Debian 13 and a booted
#               Debian 12 (mmdebstrap + systemd-nspawn -b), driven through real logins, upgraded,
#               downgraded, removed, purged and installed again (scripts/e2e.sh; DEB_RELEASES to choose).
#               E2E_ONLY=NAME[,NAME...] runs only those scenarios (scripts/e2e/scenarios/NN-NAME.sh)
#               and the state they declare, on the installed machine of each release; an unknown
#               name fails before anything is built, listing the names
# make deps     only install the Debian packages the build and the tests need

# Build: libsecret, GLib, libgcrypt, SQLite and zlib headers (zlib: gzip in KeePass databases,
# secretctl import FILE.kdbx), and g++ for libstdc++.a. Tests: a
# private bus, the reference provider and the clients checked against (secret-tool, Python
# keyring), unit and man checks; KeePassXC, imported from (secretctl import secret-service; its
# keepassxc-cli makes the KeePass databases KDBXImportTests read);
# Seahorse and gnome-keyring's prompter (gcr) under Xvfb, driven through AT-SPI and xdotool,
# screenshots by ImageMagick (SeahorseTests, LiveImportTests); the desktop portal's frontend,
# bubblewrap and xdg-dbus-proxy for sandboxed apps (PortalTests, SignalAudienceTests); Go with
# godbus and Perl's Net::DBus for the cross-client checks (ClientInteropTests, scripts/interop);
# kwalletd5 and kwallet-query (libkf5wallet-bin), which write the wallets secretctl import kwallet
# reads (scripts/make-kwallets.py).
DEB_BUILD := pkg-config libsecret-1-dev libsystemd-dev libglib2.0-dev libgcrypt20-dev libsqlite3-dev libassuan-dev g++ \
	libpam0g-dev libtss2-dev zlib1g-dev
DEB_TEST := dbus-daemon dbus-bin gnome-keyring libsecret-tools python3 python3-jeepney python3-keyring \
	python3-secretstorage groff-base man-db systemd git gcc libpam-wrapper pamtester bubblewrap xdg-dbus-proxy keepassxc \
	seahorse gcr xvfb at-spi2-core python3-pyatspi xdotool imagemagick xdg-desktop-portal swtpm swtpm-tools tpm2-tools \
	golang-go golang-dbus-dev libnet-dbus-perl libkf5wallet-bin openssh-client
# make bench: the bus, the peer providers (gnome-keyring; KeePassXC, whose package brings
# keepassxc-cli), secret-tool, and Python with jeepney and secretstorage for the commit floor,
# the report and the memory scenarios' clients (scripts/dbus-clients).
DEB_BENCH := dbus-daemon dbus-bin gnome-keyring keepassxc libsecret-tools python3 python3-jeepney python3-secretstorage
# make deb: the roots of each release (mmdebstrap), builds in them (systemd-nspawn), the changelog
# read (dpkg-dev) and hardening-check (devscripts) on what was built.
DEB_PACKAGING := mmdebstrap systemd-container dpkg-dev devscripts
# make e2e: Debian 13 and 12 systems built from Debian packages, booted in containers, logged into over ssh.
DEB_E2E := mmdebstrap systemd-container sshpass
# What make deps installs; debian/rules empties it (the build root has debian/control's
# Build-Depends, and make install needs nothing more).
DEPS_PACKAGES ?= $(DEB_BUILD) $(DEB_TEST)
# The releases make deb builds for and make e2e boots.
DEB_RELEASES ?= trixie bookworm
SWIFT ?= swift
# The oldest Swift this code is built and tested with. 6.2 is the first that parses
# nonisolated(nonsending) (Keychain+Login.swift); no toolchain older than 6.3 was tried. Debian 13's
# own swiftlang (6.0.3) is refused here, with the version, instead of failing deep in the build.
SWIFT_MINIMUM := 6.3
# The providers the provider tests run against, one full run each
# (see Sources/KeychainTestSupport/ProviderCommand.swift).
PROVIDERS ?= gnome-keyring secretd

# Release builds link the Swift runtime and FoundationEssentials statically: the programs start
# faster (no symbol lookups across the toolchain's libraries), secretd's RSS is 4 MiB lower, and
# installed copies need no Swift toolchain. They get no $ORIGIN run path either: nothing is
# loaded from the directory they are installed in (SwiftPM adds it by default, for libraries
# built next to the program). Every release build here uses the same flags, so .build/release
# is built one way only.
#
# libstdc++, which the Swift runtime needs, is linked statically too: loading the shared one
# took a quarter of secretctl's start-up instructions. The toolchain passes -lstdc++ itself, so
# a linker script named libstdc++.so, in a directory searched before GCC's, points it at
# libstdc++.a (from libstdc++-dev, which the Swift toolchain requires).
STATIC_CXX_DIR := $(CURDIR)/.build/static-libstdc++
#
# Hardening, as Debian's packages have it (lintian, hardening-check): position-independent
# (swiftc's default on Linux), and the relocations read-only once resolved at start (relro, now).
# Linked by the toolchain's lld: GNU ld (Debian 13 has no gold, which swiftc prefers) emits no
# RELRO segment for these programs, because the Swift runtime's objects have writable .rodata
# sections; lld does, and the same linker then links them on every release.
RELEASE := -c release --static-swift-stdlib --disable-local-rpath -Xswiftc -L$(STATIC_CXX_DIR) \
	-Xswiftc -use-ld=lld -Xlinker -z -Xlinker relro -Xlinker -z -Xlinker now

PREFIX ?= /usr/local
DESTDIR ?=
BINDIR := $(PREFIX)/bin
MANDIR := $(PREFIX)/share/man
USERUNITDIR := $(PREFIX)/lib/systemd/user
DBUSSERVICEDIR := $(PREFIX)/share/dbus-1/services
# What `secretctl setup` links in place of gnome-keyring's activation files and autostart entry.
SETUPDIR := $(PREFIX)/share/secretd
# PAM loads modules from the multiarch security directory only, and pam-auth-update reads
# profiles from /usr/share/pam-configs only, whatever PREFIX is.
MULTIARCH := $(shell $(CC) -print-multiarch 2>/dev/null)
PAMDIR ?= /usr/lib/$(MULTIARCH)/security
PAMCONFIGDIR ?= /usr/share/pam-configs
# xdg-desktop-portal (1.16, Debian 12) reads backends from /usr/share/xdg-desktop-portal/portals
# only, whatever PREFIX is.
PORTALDIR ?= /usr/share/xdg-desktop-portal/portals
PAM_BUILD := .build/pam

.PHONY: check-release all deps toolchain build test check-files fuzz run demo bench bench-startup leaks install clean static-cxx pam e2e \
	e2e-only release deb

all: build

# The toolchain on PATH, and its version (one line naming the one needed when it is older).
toolchain:
	@command -v $(SWIFT) >/dev/null 2>&1 || { echo "make: '$(SWIFT)' not found: install Swift $(SWIFT_MINIMUM) or later (swift.org) and put it on PATH" >&2; exit 1; }
	@version=$$($(SWIFT) --version 2>/dev/null | sed -n 's/.*Swift version \([0-9][0-9.]*\).*/\1/p' | head -n 1); \
	if [ "$$(printf '%s\n' "$(SWIFT_MINIMUM)" "$$version" | sort -V | head -n 1)" != "$(SWIFT_MINIMUM)" ] || [ -z "$$version" ]; then \
		echo "make: this needs Swift $(SWIFT_MINIMUM) or later; '$$(command -v $(SWIFT))' is Swift $${version:-of unknown version}: install $(SWIFT_MINIMUM) (swift.org) and put it first on PATH" >&2; exit 1; fi

deps: toolchain
	@scripts/install-deps.sh $(DEPS_PACKAGES)

build: deps
	$(SWIFT) build

# Every suite runs once against the first provider; the provider suite (the whole library
# API through libsecret) runs again against each further one.
test: deps pam
	$(SWIFT) build --build-tests
	@$(MAKE) --no-print-directory check-files
	@set -e; first=yes; for provider in $(PROVIDERS); do \
		echo "== tests against $$provider"; \
		if [ $$first = yes ]; then filter=""; else filter="--filter ProviderTests"; fi; \
		KEYCHAIN_TEST_PROVIDER="$$provider" $(SWIFT) test --skip-build $$filter; \
		first=no; \
	done
	@$(MAKE) --no-print-directory check-release
	@$(MAKE) --no-print-directory leaks LEAK_OPERATIONS=1000
	@$(MAKE) --no-print-directory fuzz

# The linker script behind RELEASE's static libstdc++ (see RELEASE), made on every release build.
static-cxx: deps
	@archive=$$($(CC) -print-file-name=libstdc++.a); \
	test -f "$$archive" || { echo "make: no libstdc++.a (install libstdc++-dev, which g++ brings)" >&2; exit 1; }; \
	mkdir -p "$(STATIC_CXX_DIR)"; echo "INPUT($$archive)" >"$(STATIC_CXX_DIR)/libstdc++.so"

# The release programs make install ships: they build with the Swift runtime and libstdc++
# linked statically, run, map no library of the toolchain, have no run path, and secretctl does
# not load SQLite.
check-release: static-cxx
	@echo "== release build (static Swift runtime and libstdc++)"
	$(SWIFT) build $(RELEASE) --product secretd
	$(SWIFT) build $(RELEASE) --product secretctl
	@bin=$$($(SWIFT) build $(RELEASE) --show-bin-path); for program in secretd secretctl; do \
		"$$bin/$$program" --version | grep -q "^$$program [0-9]" || { echo "$$program --version failed" >&2; exit 1; }; \
		if ldd "$$bin/$$program" | grep -q "libswiftCore\|libFoundation\|libstdc++"; then \
			echo "$$program links the Swift runtime or libstdc++ dynamically" >&2; exit 1; fi; \
		if readelf -d "$$bin/$$program" | grep -q "RPATH\|RUNPATH"; then \
			echo "$$program has a run path (libraries would be looked for there first)" >&2; exit 1; fi; \
	done; \
	if readelf -d "$$bin/secretctl" | grep -q "libsqlite3"; then echo "secretctl links SQLite" >&2; exit 1; fi; \
	echo "check-release: secretd and secretctl run, carry their Swift runtime and libstdc++, and have no run path"

# libFuzzer without its main (keychain-fuzz keeps its own and calls LLVMFuzzerRunDriver), from
# the toolchain's clang resource directory; swiftc's -sanitize=fuzzer would link libFuzzer's
# main too. Coverage and AddressSanitizer instrument the Swift code; the C libraries are not.
FUZZ_SECONDS ?= 10
FUZZ_TARGETS ?=
FUZZ_BUILD := .build/fuzz
FUZZER_LIB ?= $(firstword $(wildcard $(dir $(realpath $(shell command -v $(SWIFT))))../lib/clang/*/lib/linux/libclang_rt.fuzzer_no_main-$(shell uname -m).a))
FUZZ_FLAGS := -c release --build-path $(FUZZ_BUILD) -Xswiftc -DKEYCHAIN_FUZZING -Xswiftc -sanitize=address \
	-Xswiftc -sanitize-coverage=edge,inline-8bit-counters,pc-table,trace-cmp -Xlinker $(FUZZER_LIB) -Xlinker -lstdc++

# Every target (or FUZZ_TARGETS) for FUZZ_SECONDS on a scratch copy of fuzz/corpus; crashers
# land in .build/fuzz/work/artifacts/TARGET/.
fuzz: deps
	@test -n "$(FUZZER_LIB)" || { echo "make fuzz: no libclang_rt.fuzzer_no_main in the toolchain of '$(SWIFT)'; set FUZZER_LIB" >&2; exit 1; }
	@echo "== fuzzing, $(FUZZ_SECONDS) s per target"
	$(SWIFT) build --product keychain-fuzz $(FUZZ_FLAGS)
	scripts/fuzz.sh "$$($(SWIFT) build $(FUZZ_FLAGS) --show-bin-path)/keychain-fuzz" $(FUZZ_SECONDS) $(FUZZ_BUILD)/work $(FUZZ_TARGETS)

# Random D-Bus calls with random arguments at a throw-away secretd for DBUS_FUZZ_SECONDS
# (fuzz/dbus-fuzz.py; `make test` runs it for 30 s as part of DBusFuzzTests).
DBUS_FUZZ_SECONDS ?= 300
.PHONY: fuzz-dbus
fuzz-dbus: deps
	$(SWIFT) build --build-tests
	DBUS_FUZZ_SECONDS=$(DBUS_FUZZ_SECONDS) $(SWIFT) test --skip-build --filter 'DBusFuzzTests/fuzz\('

# Power cuts (Tests/SecretServiceTests/PowerCutTests.swift): CRASH_PHASES starts of secretd, each
# with CRASH_SECONDS of writes, recorded by scripts/power-cut/io-record.c (built with cc), then
# CRASH_CUTS cut points (0: every one) with CRASH_STATES states each rebuilt and checked. It
# prints how many cut points and states it checked. `make test` runs it with 3 phases of 1.5 s
# and 60 cut points of 8 states.
CRASH_PHASES ?= 6
CRASH_SECONDS ?= 3
CRASH_CUTS ?= 2000
CRASH_STATES ?= 10
.PHONY: crash-test
crash-test: deps
	$(SWIFT) build --build-tests
	POWER_CUT_PHASES=$(CRASH_PHASES) POWER_CUT_SECONDS=$(CRASH_SECONDS) POWER_CUT_CUTS=$(CRASH_CUTS) \
		POWER_CUT_STATES=$(CRASH_STATES) $(SWIFT) test --skip-build --filter PowerCutTests

# The man pages lint clean and render; the user units pass systemd-analyze (a static check only:
# make e2e runs them on a booted system).
check-files:
	@echo "== man pages and systemd unit"
	@for page in man/*.[1-8]; do \
		out=$$(groff -t -mdoc -ww -z "$$page" 2>&1); \
		if [ -n "$$out" ]; then echo "$$page: $$out" >&2; exit 1; fi; \
		MANWIDTH=80 man -l "$$page" >/dev/null 2>&1 || { echo "$$page does not render" >&2; exit 1; }; \
	done
	@tmp=$$(mktemp -d); mkdir -m 700 "$$tmp/run"; \
	sed "s|/usr/local/bin/secretd|$$($(SWIFT) build --show-bin-path)/secretd|" systemd/secretd.service >"$$tmp/secretd.service"; \
	cp systemd/secretd.socket "$$tmp/secretd.socket"; \
	XDG_RUNTIME_DIR="$$tmp/run" systemd-analyze verify --user --man=no "$$tmp/secretd.service" "$$tmp/secretd.socket" >"$$tmp/out" 2>&1; \
	status=$$?; if grep -q "secretd\.s" "$$tmp/out" || [ $$status -ne 0 ]; then cat "$$tmp/out" >&2; rm -rf "$$tmp"; exit 1; fi; \
	rm -rf "$$tmp"; echo "check-files: man pages lint clean, units verify"

run: build
	scripts/run-secretd.sh "$$($(SWIFT) build --show-bin-path)/secretd"

demo: build
	scripts/run-demo.sh "$$($(SWIFT) build --show-bin-path)"

# Release build; gnome-keyring and KeePassXC run the sizes up to 3000 only. ROUNDS, PROVIDERS,
# PARTS, CPU_CALLS, MEMORY_SCENARIOS, FLOOD_SECONDS, LOAD_CLIENTS, LOAD_OPERATIONS and the other
# variables of bench/run.sh reach it from make's command line. See bench/README.md.
SIZES ?= 100 1000 3000 10000 100000
bench: static-cxx
	@scripts/install-deps.sh $(DEB_BENCH)
	$(SWIFT) build $(RELEASE) --product secretd
	$(SWIFT) build $(RELEASE) --product secretctl
	$(SWIFT) build $(RELEASE) --product keychain-bench
	BIN="$$($(SWIFT) build $(RELEASE) --show-bin-path)" bench/run.sh $(SIZES)

# Start-up by D-Bus activation, a locked keyring: secretd at 3,000 and 100,000 items against
# gnome-keyring at 3,000, in rounds (bench/startup.sh; ROUNDS, SECRETD_SIZES, PEER_SIZE and
# KEYRINGS reach it from make's command line). Filling gnome-keyring's 3,000 items takes minutes:
# KEYRINGS=DIR keeps the filled keyrings for the next run.
bench-startup: static-cxx
	@scripts/install-deps.sh $(DEB_BENCH)
	$(SWIFT) build $(RELEASE) --product secretd
	BIN="$$($(SWIFT) build $(RELEASE) --show-bin-path)" bench/startup.sh

# secretd built with AddressSanitizer in .build/asan; LeakSanitizer checks it at exit.
LEAK_OPERATIONS ?= 10000
leaks: deps
	@echo "== leak check: $(LEAK_OPERATIONS) operations"
	$(SWIFT) build --sanitize address --build-path .build/asan --product secretd
	scripts/leak-check.sh .build/asan/debug/secretd $(LEAK_OPERATIONS)

# pam_secretd.so: C with libc and libpam only, loaded into sshd, login, su and display managers
# (see pam/pam_secretd.c for why it is not Swift). It exports only pam_sm_* (version script), stays
# mapped once loaded (-z nodelete: pam_end dlcloses modules) and resolves every symbol at load.
# CPPFLAGS, CFLAGS and LDFLAGS come from the environment when set (dpkg-buildflags' hardening, in
# debian/rules).
pam: deps
	@mkdir -p $(PAM_BUILD)
	$(CC) $(CPPFLAGS) -std=gnu11 -O2 $(CFLAGS) -Wall -Wextra -Werror -fPIC -fvisibility=hidden -ISources/CLoginControl \
		-shared -Wl,--version-script=pam/pam_secretd.map -Wl,--no-undefined -Wl,-z,nodelete -Wl,-z,relro -Wl,-z,now \
		$(LDFLAGS) -o $(PAM_BUILD)/pam_secretd.so pam/pam_secretd.c -lpam

# See scripts/deb.sh: where it builds, what it checks, where the packages go.
deb: toolchain
	@scripts/install-deps.sh $(DEB_PACKAGING)
	SWIFT=$(SWIFT) scripts/deb.sh $(DEB_RELEASES)

# See scripts/e2e.sh: what it boots, installs and checks. E2E_ONLY's names are checked first,
# before make deb builds anything. make deb then also builds the newer secretd of the package
# downgrade scenario (scripts/deb.sh's newer_secretd).
e2e: export DEB_NEWER_SECRETD := 1
e2e: e2e-only deb
	@scripts/install-deps.sh $(DEB_E2E)
	scripts/e2e.sh $(DEB_RELEASES)

e2e-only:
	@[ -z "$$E2E_ONLY" ] || bash scripts/e2e/scenario.sh select "$$E2E_ONLY" >/dev/null

# What make install and the packages ship: secretd and secretctl (release build), pam_secretd.so.
release: static-cxx pam
	$(SWIFT) build $(RELEASE) --product secretd
	$(SWIFT) build $(RELEASE) --product secretctl

install: release
	@bin=$$($(SWIFT) build $(RELEASE) --show-bin-path); tmp=$$(mktemp -d); set -e; \
	strip -o "$$tmp/secretd" "$$bin/secretd"; strip -o "$$tmp/secretctl" "$$bin/secretctl"; \
	sed "s|/usr/local/bin/secretd|$(BINDIR)/secretd|" systemd/secretd.service >"$$tmp/secretd.service"; \
	put() { scripts/install-unowned.sh "$(DESTDIR)" "$$@"; }; \
	put 755 "$$tmp/secretd" $(BINDIR)/secretd; \
	put 755 "$$tmp/secretctl" $(BINDIR)/secretctl; \
	for page in secretd.1 secretctl.1 secretd.conf.5 pam_secretd.8; do \
		put 644 man/$$page $(MANDIR)/man$${page##*.}/$$page; done; \
	put 644 "$$tmp/secretd.service" $(USERUNITDIR)/secretd.service; \
	put 644 systemd/secretd.socket $(USERUNITDIR)/secretd.socket; \
	put 644 systemd/org.freedesktop.secrets.service $(DBUSSERVICEDIR)/org.freedesktop.secrets.service; \
	put 644 systemd/org.freedesktop.secrets.service $(SETUPDIR)/dbus-1/services/org.freedesktop.secrets.service; \
	for file in $$(cd setup && find . -type f | sed 's|^\./||'); do put 644 setup/$$file $(SETUPDIR)/$$file; done; \
	put 644 $(PAM_BUILD)/pam_secretd.so $(PAMDIR)/pam_secretd.so; \
	put 644 pam/secretd.pam-config $(PAMCONFIGDIR)/secretd; \
	put 644 pam/secretd-ssh-agent.pam-config $(PAMCONFIGDIR)/secretd-ssh-agent; \
	put 644 portal/secretd.portal $(PORTALDIR)/secretd.portal; \
	put 644 portal/portals.conf $(SETUPDIR)/portals.conf; \
	rm -rf "$$tmp"; echo "make install: done (DESTDIR='$(DESTDIR)', PREFIX=$(PREFIX))"

clean:
	$(SWIFT) package clean
