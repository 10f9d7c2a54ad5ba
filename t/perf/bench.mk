# The benchmarks of t/perf: ingero's cost beside the bare kernel, perf,
# trace-cmd and bpftrace (t/perf/README.md). `make bench` installs the peers
# (as root) and runs the whole harness; `make bench-quick` runs it in a few
# seconds, as t9100 does, to keep it working.
#
# The driver runs on private copies of the stand-ins, so that the probes
# of a benchmark see its own calls only and no test's, and the reverse.

PERF_DIR := t/perf
PERF_BIN := $(B)/t/perf/bin
PERF_STUBS := $(PERF_BIN)/libcudart.so.13 $(PERF_BIN)/libcuda.so.1
PERF_PROGS := $(PERF_BIN)/bench-driver $(PERF_BIN)/bench-bare $(PERF_BIN)/bench-time
BENCH_OUT ?= $(B)/t/perf/out

.PHONY: bench-tools bench-cost bench-cost-quick bench-deps
bench: bench-cost
bench-quick: bench-cost-quick

bench-tools: all workloads $(PERF_PROGS) $(PERF_STUBS)

$(PERF_BIN)/libcudart.so.13: $(WL_BIN)/libcudart.so.13
	@mkdir -p $(@D)
	$(Q)cp $< $@

$(PERF_BIN)/libcuda.so.1: $(WL_BIN)/libcuda.so.1
	@mkdir -p $(@D)
	$(Q)cp $< $@

$(PERF_BIN)/bench-driver: $(PERF_DIR)/bench-driver.c $(PERF_STUBS) $(WL_HDRS)
	$(quiet) CC $@
	$(Q)$(CC) $(WL_CFLAGS) $(WL_RPATH) -o $@ $< $(PERF_STUBS) -lpthread

$(PERF_BIN)/bench-bare: $(PERF_DIR)/bench-bare.c
	@mkdir -p $(@D)
	$(quiet) CC $@
	$(Q)$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $< $(PKG_LIBS)

$(PERF_BIN)/bench-time: $(PERF_DIR)/bench-time.c
	@mkdir -p $(@D)
	$(quiet) CC $@
	$(Q)$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $<

# Without root the missing peers are reported as skipped, not fatal.
bench-deps:
	@./.ci/deps $(BENCH_PACKAGES) || echo 'ingero: benchmarking without them: their rows say skipped' >&2

bench-cost: bench-deps bench-tools
	@$(PERF_DIR)/bench.sh $(if $(BENCH_ROUNDS),--rounds $(BENCH_ROUNDS)) $(if $(BENCH_FIGURES),--figures $(BENCH_FIGURES)) $(if $(BENCH_CONTENDERS),--contenders $(BENCH_CONTENDERS)) --out $(BENCH_OUT) --bin $(PERF_BIN) --ingero $(INGERO)

bench-cost-quick: bench-tools
	@$(PERF_DIR)/bench.sh --quick --out $(BENCH_OUT) --bin $(PERF_BIN) --ingero $(INGERO)

CLEAN_FILES += $(PERF_BIN) $(BENCH_OUT)
