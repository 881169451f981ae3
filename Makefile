# Large pages for i386: build the patched kernels, the guest image, and
# run the tests in QEMU. Each step is a script in scripts/; this file only
# wires them together. Steps skip themselves when their inputs are unchanged.
#
# make help lists the targets: the '## make TARGET -- what' lines beside
# each target below, the one place they are written.

BUILD ?= $(CURDIR)/build
FLAVOURS ?= pae nopae off
RUN_FLAVOUR ?= pae
# Debian's flavours: 686-pae (2 MiB pages), 686 (4 MiB), rt-686-pae.
DEB_FLAVOUR ?= 686-pae
export BUILD
# The fuzzers in the full suite: replay a seed, or run longer.
export LP_FUZZ_SEED LP_FUZZ_SECS LP_ORACLE_SEED
# make deb: guest (the modules the test guest loads) or all.
DEB_MODULES ?= guest
export DEB_MODULES

# Tests use the uapi headers of the first kernel built; the syscall
# table does not depend on the configuration.
KHDR = $(BUILD)/obj-$(firstword $(FLAVOURS))/usr/include

all: test

## make help -- this list
help:
	@sed -n 's/^## //p' $(firstword $(MAKEFILE_LIST)) | \
		awk -F ' -- ' '{ printf "  %-34s %s\n", $$1, $$2 }'

## make deps -- install what the pipeline needs (apt-get)
deps:
	@scripts/deps

## make patch -- Debian's linux-source-6.1 with the series applied
source patch: deps
	@scripts/apply-series

# Changing a patch (patches/README.md): edit in build/linux-source-6.1,
# then put the edit in its patch. The kernel build refuses a tree with
# edits not in patches/ (LP_DIRTY=1: build it anyway, and say so); make
# patch never throws them away (LP_DISCARD=1 does).
## make refresh -- put edits made in build/linux-source-6.1 in their patches
refresh:
	@scripts/refresh
export LP_DIRTY LP_DISCARD

# The quick series gate (seconds): checkpatch --strict and the headers of
# every patch. The per-prefix build is check-series (slow, opt-in).
## make lint -- the quick series gate: checkpatch --strict, the patches' headers
lint: patch
	@scripts/lint-series

## make kernel -- the test kernels of FLAVOURS
kernel: lint
	@for f in $(FLAVOURS); do scripts/build-kernel $$f || exit 1; done

tests: kernel
	@$(MAKE) -s -C tests OUT=$(BUILD)/tests KHDR=$(KHDR) KSRC=$(BUILD)/linux-source-6.1 \
		DESTDIR=$(BUILD)/install install
	@$(MAKE) -s -C userspace OUT=$(BUILD)/userspace KHDR=$(KHDR) DESTDIR=$(BUILD)/install install
	@$(MAKE) -s -C tests/bench OUT=$(BUILD)/bench-bin KHDR=$(KHDR) DESTDIR=$(BUILD)/install install

# debootstrap's second stage boots the first kernel (this host runs no i386).
# The packages beyond minbase: mimalloc for lpctl run --heap, and the
# programs its tests run (python3's os.fork(), strace -f).
ROOTFS_PACKAGES = libmimalloc2.0,python3-minimal,strace
rootfs: tests
	@scripts/make-rootfs --include $(ROOTFS_PACKAGES) $(BUILD)/obj-$(firstword $(FLAVOURS))/arch/x86/boot/bzImage

## make test -- every flavour's runs of tests/runs (FLAVOURS=pae nopae off)
## make test FLAVOURS=nopae -- one flavour
test: rootfs
	@scripts/run-tests $(FLAVOURS)

## make run [CMD='...'] -- a shell (or one command) in the pae guest
run:
	@$(MAKE) -s rootfs FLAVOURS=$(RUN_FLAVOUR)
ifeq ($(CMD),)
	@scripts/boot $(RUN_FLAVOUR) shell
else
	@scripts/boot $(RUN_FLAVOUR) cmd '$(subst ','\'',$(CMD))' --timeout 600
endif

# Benchmarks: both large-page flavours, one guest boot each (not part of test).
# SCALE=1: the scale run instead, one pae guest with 8 GiB and 4 vCPUs.
## make bench [SCALE=1] -- benchmarks (not part of make test)
bench: rootfs
	@LP_BENCH_SCALE=$(SCALE) scripts/bench $(filter pae nopae,$(FLAVOURS))

# The edit-test loop: one program, or one of its tests, in a booted guest
# of FLAVOURS (default pae here), judged as make test judges a run.
CHECK_FLAVOURS = $(if $(filter command line environment,$(origin FLAVOURS)),$(FLAVOURS),pae)
## make check T=PROG[:TEST] -- build what changed, run one program or test in the pae guest
check:
	@test -n '$(T)' || { echo 'usage: make check T=PROG[:TEST] [FLAVOURS=...] (tests/README.md)' >&2; exit 2; }
	@$(MAKE) -s rootfs FLAVOURS='$(CHECK_FLAVOURS)'
	@scripts/check-test '$(T)' $(CHECK_FLAVOURS)

# Early-boot stalls: N boots of the test kernels to init (opt-in).
## make boot-soak [N=100] -- boot the test kernels N times, count early-boot stalls
boot-soak: rootfs
	@scripts/boot-soak $(or $(N),100) $(FLAVOURS)

# The gate's randomized tests over many seeds (opt-in): a model gap
# shows here before it reddens somebody's make test.
## make fuzz-seeds [RUNS=50] -- the oracle and the fuzzer RUNS times each, fresh seeds
fuzz-seeds: rootfs
	@scripts/fuzz-seeds $(or $(RUNS),50) $(filter pae nopae,$(FLAVOURS))

# Mutation testing (opt-in; a kernel build and a suite run a mutant).
## make mutants [MUTANTS='NN ...'] -- plant each bug of tests/mutants in the kernel, run the suite
mutants:
	@$(MAKE) -s rootfs FLAVOURS="pae nopae"
	@scripts/mutants $(MUTANTS)

## make check-series -- build the kernel at every prefix of the series (slow)
check-series: deps
	@scripts/check-series

# Debian's own kernel (opt-in, not part of test): Debian's config for
# DEB_FLAVOUR + CONFIG_LARGE_PAGE=y, built by bindeb-pkg, installed in the
# guest by dpkg -i, and the full suite on it.
## make deb [DEB_FLAVOUR=686] -- Debian's config for a flavour, as .deb packages
## make deb DEB_MODULES=all -- the same with all of Debian's modules (for a real machine)
deb: lint
	@scripts/deb-kernel $(DEB_FLAVOUR)

# The userspace tools' packages (largepage-tools, liblargepage1,
# liblargepage-dev) into $(BUILD)/debs. They need only the patched uapi
# headers: KHDR=... names them, else scripts/build-debs makes them from
# the patched tree ('make headers': no .config, no kernel build).
DEBS_KHDR := $(filter command line environment,$(origin KHDR))
## make debs-tools [KHDR=...] -- the userspace tools' packages alone
debs-tools: $(if $(DEBS_KHDR),deps,patch)
	@KHDR='$(if $(DEBS_KHDR),$(KHDR))' scripts/build-debs

## make debs -- make deb's packages and the tools'
debs: deb debs-tools

## make test-deb -- dpkg -i make deb's package in the guest, run the full suite
test-deb: deb
	@$(MAKE) -s rootfs FLAVOURS=pae
	@scripts/test-deb $(DEB_FLAVOUR)

## make check-configs -- compile gate: the series under Debian's 3 configs
check-configs: lint
	@scripts/check-configs

# Real programs on the pool, as Debian runs them: systemd, the packages
# of make debs; PostgreSQL (pgbench, a reboot), then MariaDB and OpenJDK
# in a second boot.
## make apps -- PostgreSQL, MariaDB and OpenJDK under systemd on large pages
apps: debs
	@$(MAKE) -s rootfs FLAVOURS=pae
	@scripts/apps $(DEB_FLAVOUR)

## make clean -- remove build/
clean:
	rm -rf $(BUILD)

.PHONY: all help deps source patch refresh lint kernel tests rootfs test run check bench boot-soak fuzz-seeds mutants \
	check-series deb debs debs-tools test-deb check-configs apps clean
