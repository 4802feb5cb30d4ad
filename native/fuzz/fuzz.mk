# Builds the libFuzzer targets with clang, ASan and UBSan: make -C native fuzz
FUZZ_CC ?= clang
BUILD ?= build-fuzz
SRC = $(filter-out src/%.h,$(wildcard src/*.c))
FUZZ_FLAGS = -std=c99 -D_POSIX_C_SOURCE=200809L -g -O1 -fno-omit-frame-pointer \
             -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -Iinclude -Isrc

all: $(BUILD)/fuzz_kbin $(BUILD)/fuzz_elf

$(BUILD)/%: fuzz/%.c $(SRC) include/polykern.h src/internal.h src/elf_internal.h src/kbin_tables.h src/tensor_maps.h
	@mkdir -p $(BUILD)
	$(FUZZ_CC) $(FUZZ_FLAGS) $< $(SRC) -o $@ -lpthread -ldl -lm
