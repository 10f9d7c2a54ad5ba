# The programs the tests trace and the stand-in CUDA libraries they run on,
# built by `make workloads` into t/workloads/bin/ ($WORKLOADS in the tests).
#
# To add a workload, add t/workloads/NAME.c (a main(); workload.h has CALL(),
# which counts and checks a call, and report(), which prints the one summary
# line) and nothing else: it becomes t/workloads/bin/NAME, linked against both
# stand-ins with RUNPATH $ORIGIN and --as-needed (a program that calls no
# CUDA needs none). Sources named lib*.c are libraries, not workloads:
#   libcuda.c   -> libcuda.so.1     the driver stand-in, with the fake GPU
#   libcudart.c -> libcudart.so.13  the runtime stand-in, calling the driver
#   liblate.c   -> liblate.so       RUNPATH $ORIGIN/late, for late-dlopen;
#                                   bin/late/ holds copies of both stand-ins
# static-rt has a rule of its own: the runtime compiled into the program.
#
# NVIDIA's entry points start with push %rbp; mov %rsp,%rbp, which the kernel
# emulates under a uprobe; any other first instruction is single-stepped, ~10x
# dearer per hit. The flags below keep that prologue first in every function
# (a frame pointer, no shrink-wrapping, no endbr64); t1010 checks it.

WL_DIR := t/workloads
WL_BIN := $(B)/t/workloads/bin
WL_LIB_SRCS := $(wildcard $(WL_DIR)/lib*.c)
WL_SRCS := $(filter-out $(WL_LIB_SRCS),$(wildcard $(WL_DIR)/*.c))
WL_PROGS := $(patsubst $(WL_DIR)/%.c,$(WL_BIN)/%,$(WL_SRCS))
WL_STUBS := $(WL_BIN)/libcudart.so.13 $(WL_BIN)/libcuda.so.1
WL_LATE := $(WL_BIN)/liblate.so $(WL_BIN)/late/libcudart.so.13 $(WL_BIN)/late/libcuda.so.1
WL_HDRS := $(wildcard $(WL_DIR)/*.h)

WL_X86 = $(filter x86_64%,$(shell $(CC) -dumpmachine))
WL_CFLAGS = -std=gnu11 $(CFLAGS) -O2 $(WARNINGS) -D_GNU_SOURCE -fno-omit-frame-pointer -fno-shrink-wrap \
	-fno-optimize-sibling-calls -fno-schedule-insns2 \
	$(if $(WL_X86),-fcf-protection=none) -Wl,--build-id
WL_LIB_CFLAGS = $(WL_CFLAGS) -fPIC -shared -fvisibility=hidden
WL_RPATH = -Wl,--enable-new-dtags -Wl,-rpath,'$$ORIGIN'

.PHONY: workloads
workloads: $(WL_PROGS) $(WL_STUBS) $(WL_LATE)

$(WL_BIN)/libcuda.so.1: $(WL_DIR)/libcuda.c $(WL_HDRS)
	@mkdir -p $(@D)
	$(quiet) CC $@
	$(Q)$(CC) $(WL_LIB_CFLAGS) -Wl,-soname,libcuda.so.1 -o $@ $< -lpthread

$(WL_BIN)/libcudart.so.13: $(WL_DIR)/libcudart.c $(WL_BIN)/libcuda.so.1 $(WL_HDRS)
	$(quiet) CC $@
	$(Q)$(CC) $(WL_LIB_CFLAGS) -Wl,-soname,libcudart.so.13 $(WL_RPATH) -o $@ $< $(WL_BIN)/libcuda.so.1 -lpthread

$(WL_BIN)/liblate.so: $(WL_DIR)/liblate.c $(WL_BIN)/libcudart.so.13 $(WL_HDRS)
	$(quiet) CC $@
	$(Q)$(CC) $(WL_LIB_CFLAGS) -Wl,--enable-new-dtags -Wl,-rpath,'$$ORIGIN/late' -Wl,-rpath-link,$(WL_BIN) \
		-o $@ $< $(WL_BIN)/libcudart.so.13

$(WL_BIN)/late/%: $(WL_BIN)/%
	@mkdir -p $(@D)
	$(Q)cp $< $@

$(WL_BIN)/static-rt: $(WL_DIR)/static-rt.c $(WL_DIR)/libcudart.c $(WL_BIN)/libcuda.so.1 $(WL_HDRS)
	$(quiet) CC $@
	$(Q)$(CC) $(WL_CFLAGS) $(WL_RPATH) -o $@ $(WL_DIR)/static-rt.c $(WL_DIR)/libcudart.c \
		$(WL_BIN)/libcuda.so.1 -lpthread

$(WL_BIN)/%: $(WL_DIR)/%.c $(WL_STUBS) $(WL_HDRS)
	$(quiet) CC $@
	$(Q)$(CC) $(WL_CFLAGS) $(WL_RPATH) -o $@ $< -Wl,--as-needed $(WL_STUBS) -ldl -lpthread

CLEAN_FILES += $(WL_BIN)
