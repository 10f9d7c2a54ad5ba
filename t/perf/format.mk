# The trace format's benchmark: bytes per event and per column, encode and
# decode rates on one core, over a seeded synthetic mix (t/perf/format-bench.c).
# BENCH_FORMAT_EVENTS sets its size; bench-quick runs a small one.

BENCH_FORMAT := $(OBJ)/t/perf/format-bench
BENCH_FORMAT_EVENTS ?= 4000000

.PHONY: bench-format bench-format-quick
bench: bench-format
bench-quick: bench-format-quick

$(BENCH_FORMAT): t/perf/format-bench.c $(LIBINGERO) formats/format.h
	@mkdir -p $(@D)
	$(quiet) LINK $@
	$(Q)$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $< $(LIBINGERO) $(PKG_LIBS) -lm

bench-format: $(BENCH_FORMAT)
	@$(BENCH_FORMAT) $(BENCH_FORMAT_EVENTS) 5

bench-format-quick: $(BENCH_FORMAT)
	@$(BENCH_FORMAT) 300000 2

CLEAN_FILES += $(BENCH_FORMAT)
