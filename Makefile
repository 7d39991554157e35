# gpugate — one non-recursive Makefile.
#
#   make            build/gpugate (warnings are errors); installs what is
#                   missing first (deploy/install-deps.sh), like make run
#   make test       the whole suite (installs what it needs first)
#   make run        local PostgreSQL under ./var, migrations, example config,
#                   serve on 127.0.0.1:8080
#   make asan       unit tests under AddressSanitizer + UBSan
#   make lint       include layering (deploy/layers.sh), clang-tidy, cppcheck, banned calls
#   make format-check / make format
#   make openapi    regenerate openapi/openapi.json from openapi/openapi.yaml
#   make fuzz       every libFuzzer harness for FUZZ_SECONDS each (tests/fuzz)

CC      ?= cc
PKGS    := libmicrohttpd jansson libpq libjwt libcurl jose
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null)
CHECK_LIBS := $(shell pkg-config --libs check 2>/dev/null)

WARN    := -std=c11 -Wall -Wextra -Wpedantic -Wshadow -Wstrict-prototypes \
           -Wmissing-prototypes -Wformat=2 -Wconversion -Werror
CPPFLAGS += -D_GNU_SOURCE -I. -Ibuild/gen $(PKG_CFLAGS)
CFLAGS  ?= -O2 -g
CFLAGS  += $(WARN) -pthread -MMD -MP
LDLIBS  += $(PKG_LIBS) -lcrypto -lz -lm -pthread

# Everything but main.c goes into a library shared by the binary and tests.
LIB_SRC := $(filter-out server/main.c,$(wildcard server/*.c handlers/*.c db/*.c scheduler/*.c control/*.c billing/*.c gcp/*.c identity/*.c lib/*.c))
GEN_SRC := build/gen/embedded.c
# GET /docs: the page and the Redoc bundle from the pinned npm tools.
DOCS_JS := deploy/tools/node_modules/redoc/bundles/redoc.standalone.js
EMBED   := $(sort $(wildcard db/migrations/*.sql)) openapi/openapi.yaml openapi/openapi.json \
           openapi/docs.html $(DOCS_JS) $(sort $(wildcard web/*.html web/*.js web/*.css web/*.txt))

UNIT_SRC  := $(wildcard tests/unit/*.c)
INTEG_SRC := $(wildcard tests/integration/*.c)
EMU_SRC   := $(filter-out tests/emulator/bq_%.c tests/emulator/log_%.c,$(wildcard tests/emulator/*.c))
BQ_EMU_SRC := $(wildcard tests/emulator/bq_*.c)
LOG_EMU_SRC := $(wildcard tests/emulator/log_*.c)

OBJ      := $(LIB_SRC:%.c=build/obj/%.o) build/obj/gen/embedded.o
ASAN_OBJ := $(LIB_SRC:%.c=build/asan/%.o) build/asan/gen/embedded.o

.PHONY: all test run asan lint format format-check openapi clean deps unit integration bench deps-then-build
# On a fresh clone (libraries, check or the npm tools missing) plain `make`
# installs them first (deploy/install-deps.sh), then builds in a new make
# that sees the libraries' flags; on a ready machine it only builds.
DEPS_READY := $(shell pkg-config --exists $(PKGS) check 2>/dev/null && test -f $(DOCS_JS) && echo yes)
all: $(if $(DEPS_READY),build/gpugate,deps-then-build)

deps-then-build:
	deploy/install-deps.sh
	$(MAKE) build/gpugate

build/tools/embed: deploy/tools/embed.c
	@mkdir -p $(@D)
	$(CC) -std=c11 -O2 -Wall -Wextra -Werror -o $@ $<

# the list of embedded files, rewritten only when it changes: a file
# removed or renamed (a migration renumbered) rebuilds the table too
build/gen/embed.list: FORCE
	@mkdir -p $(@D)
	@echo '$(EMBED)' | cmp -s - $@ || echo '$(EMBED)' > $@

$(GEN_SRC): build/tools/embed $(EMBED) build/gen/embed.list
	@mkdir -p $(@D)
	build/tools/embed $(EMBED) > $@.tmp && mv $@.tmp $@

.PHONY: FORCE
FORCE:

# The Redoc bundle comes from the pinned npm tools: install them (and the
# Debian packages) when it is missing, as make run does.
$(DOCS_JS):
	deploy/install-deps.sh

build/obj/gen/embedded.o: $(GEN_SRC)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -O2 -c -o $@ $<

build/asan/gen/embedded.o: $(GEN_SRC)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -O0 -c -o $@ $<

build/obj/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

build/gpugate: build/obj/server/main.o $(OBJ)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# the emulator's latency model is a pure module with unit tests of its own
build/unit_tests: $(UNIT_SRC:%.c=build/obj/%.o) build/obj/tests/emulator/emu_latency.o build/obj/tests/emulator/log_filter.o $(OBJ)
	$(CC) $(LDFLAGS) -o $@ $^ $(CHECK_LIBS) $(LDLIBS)

build/integration_tests: $(INTEG_SRC:%.c=build/obj/%.o) $(OBJ)
	$(CC) $(LDFLAGS) -o $@ $^ $(CHECK_LIBS) $(LDLIBS)

build/batch_emulator: $(EMU_SRC:%.c=build/obj/%.o) $(OBJ)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# the BigQuery emulator (tests/emulator/bq_*.c): a binary of its own
build/bigquery_emulator: $(BQ_EMU_SRC:%.c=build/obj/%.o) build/obj/tests/emulator/emu_serve.o
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# the Cloud Logging emulator (tests/emulator/log_*.c): a binary of its own
build/logging_emulator: $(LOG_EMU_SRC:%.c=build/obj/%.o) build/obj/tests/emulator/emu_serve.o
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# Benchmarks (not tests): `make bench` prints their figures.
build/bench_sched: build/obj/bench/sched.o $(filter build/obj/scheduler/%,$(OBJ))
	$(CC) $(LDFLAGS) -o $@ $^ -lm

build/bench_ingest: build/obj/bench/ingest.o
	$(CC) $(LDFLAGS) -o $@ $^

build/bench_hello: build/obj/bench/hello.o
	$(CC) $(LDFLAGS) -o $@ $^ $(PKG_LIBS) -pthread

build/bench_driver: build/obj/bench/driver.o
	$(CC) $(LDFLAGS) -o $@ $^ $(PKG_LIBS) -lm -pthread

build/bench_admission: build/obj/bench/admission.o $(OBJ)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

build/bench_sse: build/obj/bench/sse.o
	$(CC) $(LDFLAGS) -o $@ $^

bench: build/bench_sched build/bench_ingest build/gpugate build/batch_emulator build/bench_hello build/bench_driver build/bench_admission build/bench_sse
	build/bench_sched
	bench/admission.sh
	bench/ingest.sh
	bench/http.sh
	bench/oidc.sh
	bench/kueue.sh
	BENCH_BATCH_LATENCY=0 bench/kueue.sh
	bench/race.sh
	bench/faults.sh
	bench/sse.sh

# ASan + UBSan build of the unit tests.
ASAN_FLAGS := -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
build/asan/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(WARN) -pthread -MMD -MP $(ASAN_FLAGS) -c -o $@ $<

build/asan/unit_tests: $(UNIT_SRC:%.c=build/asan/%.o) build/asan/tests/emulator/emu_latency.o build/asan/tests/emulator/log_filter.o $(ASAN_OBJ)
	$(CC) $(ASAN_FLAGS) -o $@ $^ $(CHECK_LIBS) $(LDLIBS)

asan: build/asan/unit_tests
	CK_FORK=no ASAN_OPTIONS=detect_leaks=1 build/asan/unit_tests

unit: build/unit_tests
	build/unit_tests

deps:
	deploy/install-deps.sh

test:
	tests/run.sh

run:
	deploy/run-local.sh

C_FILES := $(wildcard server/*.[ch] handlers/*.[ch] db/*.[ch] scheduler/*.[ch] control/*.[ch] billing/*.[ch] gcp/*.[ch] identity/*.[ch] lib/*.[ch] tests/unit/*.[ch] tests/integration/*.[ch] tests/emulator/*.[ch] bench/*.[ch] deploy/tools/*.c) $(wildcard tests/fuzz/*.[ch])

format:
	clang-format -i $(C_FILES)

format-check:
	clang-format --dry-run --Werror $(C_FILES)

lint: $(GEN_SRC)
	deploy/lint.sh

openapi:
	deploy/openapi-json.sh

clean:
	rm -rf build

-include $(shell find build -name '*.d' 2>/dev/null)

# libFuzzer harnesses (tests/fuzz/fuzz_*.c) with ASan + UBSan, built with
# clang over the same sources (warnings shown, not errors: the -Werror build
# is gcc's above, and a clang-only warning must not hide the fuzzers).
# `make fuzz` runs each for FUZZ_SECONDS (FUZZ_ONLY=name runs one); corpora
# grow in build/fuzz/corpus, seeds are tests/fuzz/corpus/<name>/, findings
# land in build/fuzz/findings/.
FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 60
FUZZ_FLAGS   := -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all \
                -fno-omit-frame-pointer
FUZZ_NAMES   := $(patsubst tests/fuzz/fuzz_%.c,%,$(wildcard tests/fuzz/fuzz_*.c))
FUZZ_BINS    := $(FUZZ_NAMES:%=build/fuzz/fuzz_%)
FUZZ_OBJ     := $(LIB_SRC:%.c=build/fuzz/%.o) build/fuzz/gen/embedded.o build/fuzz/tests/fuzz/fake_req.o

.PHONY: fuzz fuzz-build
# objects of a pattern rule's target: kept, so a change rebuilds only its own
.SECONDARY: $(FUZZ_OBJ) $(FUZZ_NAMES:%=build/fuzz/tests/fuzz/fuzz_%.o)
build/fuzz/%.o: %.c
	@mkdir -p $(@D)
	$(FUZZ_CC) $(CPPFLAGS) $(filter-out -Werror,$(WARN)) -pthread -MMD -MP $(FUZZ_FLAGS) -fsanitize=fuzzer-no-link -c -o $@ $<

build/fuzz/gen/embedded.o: $(GEN_SRC)
	@mkdir -p $(@D)
	$(FUZZ_CC) $(CPPFLAGS) -O0 -c -o $@ $<

build/fuzz/fuzz_%: build/fuzz/tests/fuzz/fuzz_%.o $(FUZZ_OBJ)
	$(FUZZ_CC) $(FUZZ_FLAGS) -fsanitize=fuzzer -o $@ $^ $(LDLIBS)

fuzz-build: $(FUZZ_BINS)

fuzz: fuzz-build
	tests/fuzz/run.sh $(FUZZ_SECONDS) $(or $(FUZZ_ONLY),$(FUZZ_NAMES))
