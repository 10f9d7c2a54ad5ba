# The analyzer's benchmark: events/s, wall time and peak memory of
# `ingero analyze` on a synthetic trace of BENCH_ANALYZE_EVENTS events
# (t/perf/mix.h), written for the run and deleted after it (BENCH_KEEP=1 keeps it).
# `make bench-analyze BENCH_ANALYZE_EVENTS=100000000` is the goal's size.

BENCH_ANALYZE_BIN := $(B)/t/perf/bin
BENCH_ANALYZE_EVENTS ?= 20000000
BENCH_ANALYZE_ROUNDS ?= 3

.PHONY: bench-analyze bench-analyze-quick
bench: bench-analyze
bench-quick: bench-analyze-quick

$(BENCH_ANALYZE_BIN)/mkmix: t/perf/mkmix.c t/perf/mix.h $(LIBINGERO)
	@mkdir -p $(@D)
	$(quiet) LINK $@
	$(Q)$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $< $(LIBINGERO) $(PKG_LIBS) -lm

bench-analyze: $(INGERO) $(BENCH_ANALYZE_BIN)/mkmix $(BENCH_ANALYZE_BIN)/bench-time
	@t/perf/analyze-bench.sh --events $(BENCH_ANALYZE_EVENTS) --rounds $(BENCH_ANALYZE_ROUNDS) \
		--out $(BENCH_OUT) --bin $(BENCH_ANALYZE_BIN) --ingero $(INGERO)

bench-analyze-quick: $(INGERO) $(BENCH_ANALYZE_BIN)/mkmix $(BENCH_ANALYZE_BIN)/bench-time
	@t/perf/analyze-bench.sh --events 1000000 --rounds 1 --out $(BENCH_OUT) --bin $(BENCH_ANALYZE_BIN) \
		--ingero $(INGERO)

CLEAN_FILES += $(BENCH_ANALYZE_BIN)/mkmix
