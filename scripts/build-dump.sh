#!/usr/bin/env bash
# Build the specification's executable (Spec/Main.agda) and write the expression dumps.
#
#   scripts/build-dump.sh            # build/agda/Main, then build/dump/{cnn,dot,chain,ops}.json
#                                    # and build/dump/zoo/NAME.json for every models/NAME.model
#   scripts/build-dump.sh --binary   # only (re)build the executable, print its path
#   scripts/build-dump.sh --check-forward
#                                    # also build/dump/check-forward.json (Main check-forward:
#                                    # the CNN forward pass, array-level vs chain, each layer
#                                    # tabulated once: under a second)
#   scripts/build-dump.sh --proofs   # also check Spec/Everything.agda (`make proofs`), beside
#                                    # the compilation of the executable: `make test` and
#                                    # `make demo`. The modules Main imports are type-checked
#                                    # first (33 s from scratch on 2 cores, Intel, 2026-12-03);
#                                    # then the rest of the proofs (125 s) run beside Agda's
#                                    # Haskell output (61 s) and GHC (-j, 75 s). Agda writes a
#                                    # module's interface once it has checked it, so the two
#                                    # never write the same file: the compilation reads only
#                                    # the interfaces of the first step.
#
# Incremental: the executable is rebuilt only when a file under Spec/ is newer than it, and a
# dump is rewritten only when the executable is newer than it. Environment overrides:
# AGDA (agda), AGDA_STDLIB (/usr/share/agda-stdlib), AGDA_BUILD (build/agda), DUMP_DIR
# (build/dump), DUMP_MODELS ("cnn dot chain ops").
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

agda="${AGDA:-agda}"
stdlib="${AGDA_STDLIB:-/usr/share/agda-stdlib}"
build="${AGDA_BUILD:-build/agda}"
dumps="${DUMP_DIR:-build/dump}"
models="${DUMP_MODELS:-cnn dot chain ops}"
binary="$build/Main"

# The Spec modules Spec/Main.agda depends on (itself included), as file names.
sources() {
  local todo=(Spec/Main.agda) seen=" " f m
  while ((${#todo[@]})); do
    f="${todo[0]}"
    todo=("${todo[@]:1}")
    [[ "$seen" == *" $f "* || ! -f "$f" ]] && continue
    seen+="$f "
    echo "$f"
    for m in $(sed -n -E 's/^[[:space:]]*(open[[:space:]]+)?import[[:space:]]+(Spec\.[^[:space:]]+).*/\2/p' "$f"); do
      todo+=("${m//.//}.agda")
    done
  done
}

# Is the executable missing or older than one of its sources?
stale() {
  [[ ! -x "$binary" ]] && return 0
  local f
  for f in $(sources); do
    [[ "$f" -nt "$binary" ]] && return 0
  done
  return 1
}

# One Agda build at a time in a checkout (`make proofs` takes the same lock): a second `make
# dump`, or the one the runtime starts when the dumps are missing, waits for the first rather
# than both writing build/agda.
mkdir -p "$build" 2>/dev/null || true
if command -v flock >/dev/null && { exec 9>"$build/.lock"; } 2>/dev/null; then
  if ! flock -n 9; then
    echo "build-dump: another Agda build is running in this checkout; waiting for it" >&2
    flock 9
  fi
fi

proofs() {
  "$agda" -i "$stdlib" -i . Spec/Everything.agda
}

if [[ "${1:-}" == "--proofs" ]]; then
  shift
  if stale; then
    echo "build-dump: checking the modules Spec/Main.agda imports" >&2
    "$agda" -i "$stdlib" -i . Spec/Main.agda >&2
    log="$build/proofs.log"
    echo "build-dump: checking the proofs (Spec/Everything.agda, output in $log) while Agda" \
      "and GHC compile Spec/Main.agda into $build" >&2
    proofs > "$log" 2>&1 &
    checking=$!
    status=0
    # GHC compiles independent modules at once on every core (-j)
    "$agda" --compile --compile-dir="$build" --ghc-flag=-j -i "$stdlib" -i . \
      Spec/Main.agda >&2 || status=$?
    if ! wait "$checking"; then
      cat "$log" >&2
      echo "build-dump: the proofs do not check (Spec/Everything.agda: above)" >&2
      exit 1
    fi
    echo "build-dump: the proofs check (Spec/Everything.agda)" >&2
    [[ $status -eq 0 ]] || exit "$status"
    touch "$binary"
  else
    proofs >&2
  fi
elif stale; then
  echo "build-dump: compiling Spec/Main.agda into $build (slow the first time)" >&2
  "$agda" --compile --compile-dir="$build" --ghc-flag=-j -i "$stdlib" -i . Spec/Main.agda >&2
  touch "$binary"
fi

if [[ "${1:-}" == "--binary" ]]; then
  echo "$binary"
  exit 0
fi

mkdir -p "$dumps"
# write FILE COMMAND...: run the executable into FILE unless FILE is newer than it
write() {
  local out="$1"
  shift
  if [[ ! -s "$out" || "$binary" -nt "$out" ]]; then
    "$binary" "$@" > "$out.tmp"
    mv "$out.tmp" "$out"
    echo "build-dump: wrote $out" >&2
  fi
}

for model in $models; do
  write "$dumps/$model.json" dump "$model"
done
# the zoo: every models/*.model, elaborated by `Main model`, into build/dump/zoo/NAME.json
mkdir -p "$dumps/zoo"
for file in models/*.model; do
  [[ -e "$file" ]] || continue
  out="$dumps/zoo/$(basename "$file" .model).json"
  if [[ ! -s "$out" || "$binary" -nt "$out" || "$file" -nt "$out" ]]; then
    "$binary" model "$file" > "$out.tmp"
    mv "$out.tmp" "$out"
    echo "build-dump: wrote $out" >&2
  fi
done
if [[ "${1:-}" == "--check-forward" ]]; then
  write "$dumps/check-forward.json" check-forward
fi
