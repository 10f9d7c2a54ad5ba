# The trace reader's fuzzer (libFuzzer, with ASan and UBSan) and mktrace, the
# tool that writes the known traces the format tests and the fuzzer's seeds
# start from. `make fuzz` runs the fuzzer for FUZZ_SECONDS; t0050 runs it for
# a bounded 15 s in `make test`. Without clang the fuzzer is not built and
# t0050 skips.

FUZZ_DIR := t/fuzz
FUZZ_BIN := $(OBJ)/t/fuzz
FUZZ_SECONDS ?= 300
FUZZ_CORPUS ?= $(FUZZ_BIN)/corpus
FUZZ_CC := $(shell command -v clang-14 2>/dev/null || command -v clang 2>/dev/null)
FUZZER := $(if $(FUZZ_CC),$(FUZZ_BIN)/reader-fuzz)
MKTRACE := $(FUZZ_BIN)/mktrace
# The reader and what it needs, compiled again with the sanitizers.
FUZZ_SRCS := $(FUZZ_DIR)/reader-fuzz.c $(wildcard formats/*.c) lib/error.c lib/api.c

.PHONY: fuzz fuzz-quick fuzz-tools fuzz-seeds
# `make test` builds what t0000-t0099 run.
test-run: fuzz-tools
fuzz-tools: $(MKTRACE) $(FUZZER)

$(MKTRACE): $(FUZZ_DIR)/mktrace.c $(LIBINGERO)
	@mkdir -p $(@D)
	$(quiet) LINK $@
	$(Q)$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $< $(LIBINGERO) $(PKG_LIBS)

$(FUZZ_BIN)/reader-fuzz: $(FUZZ_SRCS) $(wildcard formats/*.h) lib/trace.h lib/event.h
	@mkdir -p $(@D)
	$(quiet) CLANG $@
	$(Q)$(FUZZ_CC) -std=gnu11 -g -O1 -D_GNU_SOURCE -I. $(PKG_CFLAGS) \
		-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
		-o $@ $(FUZZ_SRCS) $(PKG_LIBS)

# Seeds: whole traces, one without its footer, one of many blocks.
fuzz-seeds: $(MKTRACE)
	@mkdir -p $(FUZZ_CORPUS)
	$(Q)$(MKTRACE) $(FUZZ_CORPUS)/seed-small.ing.zst
	$(Q)$(MKTRACE) --no-footer $(FUZZ_CORPUS)/seed-nofooter.ing.zst
	$(Q)$(MKTRACE) --scale 3 $(FUZZ_CORPUS)/seed-scale3.ing.zst

fuzz: fuzz-tools fuzz-seeds
	@test -n "$(FUZZER)" || { echo 'ingero: make fuzz needs clang (apt-get install clang libclang-rt-14-dev)' >&2; exit 1; }
	$(FUZZER) -max_total_time=$(FUZZ_SECONDS) -rss_limit_mb=2048 -timeout=10 -max_len=262144 $(FUZZ_CORPUS)

fuzz-quick: fuzz-tools fuzz-seeds
	@test -n "$(FUZZER)" || { echo 'ingero: make fuzz-quick needs clang' >&2; exit 1; }
	$(FUZZER) -max_total_time=15 -rss_limit_mb=2048 -timeout=10 -max_len=262144 $(FUZZ_CORPUS)

CLEAN_FILES += $(FUZZ_BIN)
