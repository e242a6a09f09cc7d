# make run   install what is missing, build, run the example against a private keyring
# make test  install what is missing, build, run every test
# make deps  only install the Debian packages the build and the tests need

# Build: libsecret and GLib headers. Tests: a private bus, the reference provider and the
# clients the library is checked against (secret-tool, Python keyring).
DEB_BUILD := pkg-config libsecret-1-dev libglib2.0-dev libgcrypt20-dev libsqlite3-dev
DEB_TEST := dbus-daemon dbus-bin gnome-keyring libsecret-tools python3 python3-keyring python3-secretstorage
SWIFT ?= swift
# The providers the provider tests run against, one full run each
# (see Sources/KeychainTestSupport/ProviderCommand.swift).
PROVIDERS ?= gnome-keyring secretd

.PHONY: all deps toolchain build test run clean

all: build

toolchain:
	@command -v $(SWIFT) >/dev/null 2>&1 || { echo "make: '$(SWIFT)' not found: install the Swift 6 toolchain (swift.org) and put it on PATH" >&2; exit 1; }

deps: toolchain
	@scripts/install-deps.sh $(DEB_BUILD) $(DEB_TEST)

build: deps
	$(SWIFT) build

# Every suite runs once against the first provider; the provider suite (the whole library
# API through libsecret) runs again against each further one.
test: deps
	$(SWIFT) build --build-tests
	@set -e; first=yes; for provider in $(PROVIDERS); do \
		echo "== tests against $$provider"; \
		if [ $$first = yes ]; then filter=""; else filter="--filter ProviderTests"; fi; \
		KEYCHAIN_TEST_PROVIDER="$$provider" $(SWIFT) test --skip-build $$filter; \
		first=no; \
	done

run: build
	scripts/run-demo.sh "$$($(SWIFT) build --show-bin-path)/keychain-demo"

clean:
	$(SWIFT) package clean
