#!/usr/bin/env bash
# Batches over MPI ranks and over GPUs on a GPU machine that has no Open MPI (issues 17 and 18), in
# two halves:
#   scripts/gpu-mpi-check.sh pack   here: build pixflow with CUDA (sm_90) and MPI, OpenImageIO off
#                                   (scripts/gpu-check.sh pack: build-gpu/, gpu-pack/), and pack it
#                                   into gpu-pack-mpi/ (git-ignored, about 45 MB: gpu-pack/ and
#                                   more; `PIXFLOW_GPU_TAG=mpi scripts/gpu-check.sh run` runs on it)
#                                   with Open MPI 4.1.4 and PMIx from this Debian 12 (their trees
#                                   under their absolute paths, ompi/), the libraries, and
#                                   scripts/bench/codec_limit.cpp built here
#   scripts/gpu-mpi-check.sh run    on the GPU machine (root), from the repository root, with
#                                   gpu-pack-mpi/ carried: runs the packed Open MPI where it lies
#                                   (OPAL_PREFIX, PMIX_LIBDIR: the machine may have an Open
#                                   MPI of its own, which is left alone), then the sections of
#                                   $SECTIONS (default: all of them), logs to $OUT:
#     gpu      64 synthetic 2048x2048 RGB PPM through pipelines/batch-blur-pool.toml --backend
#              cuda, 3 rounds of: one process on GPU 0, one process on every GPU (--devices all),
#              mpirun -np <GPUs> --bind-to none (one rank per GPU); once with Open MPI's default
#              binding; the outputs compared; then -np 2 and -np 4 on 16 small images, bit for bit
#     cpu      the same 64 images --backend cpu: one process against mpirun -np 2 (MPI's overhead
#              on a quiet many-core machine: wall and CPU time of every process, 3 rounds)
#     codecs   scripts/bench-codecs.sh with BACKEND=cuda FORMATS="ppm png jpg": the CUDA batch
#              against its codec limit (blur-pool, and load -> save)
#     segment  128 1000x1000 images through pipelines/batch-segment.toml (chan_vese, 500
#              iterations) --backend cuda on one GPU, on every GPU, and one rank per GPU, 3
#              rounds; then once on every GPU with --trace (scripts/bench/trace_summary.py)
#     trace    the CUDA blur-pool batch of 64 and of 256 images (the 64, 4 times) with --trace:
#              where its time goes (scripts/bench/trace_summary.py), 2 rounds each
#     tests    pixflow_mpi_tests (the MPI tests, GPU ones included) under the packed mpiexec
#              (more than 5 minutes on the H200 machine, 2026-11-29: each fault test takes about
#              18 s; give it a call of its own, MPI_TEST_FILTER to run a part)
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-}
pack=gpu-pack-mpi

if [ "$mode" = pack ]; then
  [ -d /usr/local/cuda/bin ] && export PATH="$PATH:/usr/local/cuda/bin"
  scripts/gpu-check.sh pack > /dev/null
  grep -q 'PIXFLOW_WITH_MPI:BOOL=ON' build-gpu/CMakeCache.txt || { echo "build-gpu has no MPI (scripts/setup.sh)" >&2; exit 1; }
  # the whole GPU pack (so `PIXFLOW_GPU_TAG=mpi scripts/gpu-check.sh run` runs on this one too:
  # one carry for the GPU check and the MPI check), then Open MPI and what it needs
  rm -rf "$pack" && mkdir -p "$pack" && cp -r gpu-pack/. "$pack/"
  mkdir -p "$pack/ompi/usr/bin" "$pack/ompi/usr/lib/x86_64-linux-gnu" "$pack/ompi/usr/share" "$pack/ompi/etc"
  cp -L /usr/bin/orterun /usr/bin/orted "$pack/ompi/usr/bin/"
  ln -s orterun "$pack/ompi/usr/bin/mpirun" && ln -s orterun "$pack/ompi/usr/bin/mpiexec"
  cp -a /usr/lib/x86_64-linux-gnu/openmpi /usr/lib/x86_64-linux-gnu/pmix2 "$pack/ompi/usr/lib/x86_64-linux-gnu/"
  rm -rf "$pack"/ompi/usr/lib/x86_64-linux-gnu/{openmpi,pmix2}/include
  find "$pack/ompi" \( -name '*java*' -o -name '*.a' \) -print0 | xargs -0 rm -rf
  cp -r /usr/share/openmpi "$pack/ompi/usr/share/"
  cp -r /etc/openmpi "$pack/ompi/etc/"
  # the codec-limit tool of scripts/bench-codecs.sh, without OpenImageIO: PPM, and PNG and JPEG
  # on libpng and libjpeg (which the ldd below packs, as it does for pixflow_io.so)
  t=$(mktemp -d)
  for s in file codecs netpbm npy png jpeg grey_palette; do
    g++ -O2 -DNDEBUG -std=c++20 -DPIXFLOW_IO_PNG=1 -DPIXFLOW_IO_JPEG=1 -Isdk/include -Iplugins/io/kernels \
      -c "plugins/io/kernels/$s.cpp" -o "$t/$s.o"
  done
  g++ -O2 -DNDEBUG -std=c++20 -Isdk/include -Iplugins/io/kernels scripts/bench/codec_limit.cpp "$t"/*.o -lpng -ljpeg \
    -ltbb -o "$pack/build/bin/codec_limit"
  rm -rf "$t"
  # Every shared library needed, except the C/C++ runtime and the driver the other machine has.
  find "$pack/build" "$pack/ompi" -type f \( -name '*.so*' -o -perm -u+x \) -print0 | xargs -0 ldd 2>/dev/null |
    awk '/=> \// {print $3}' | sort -u |
    grep -vE '/(libc|libm|libstdc\+\+|libgcc_s|libpthread|libdl|librt|libcuda|ld-linux[^/]*)\.so' |
    grep -v -e "$PWD/build-gpu" -e "$PWD/$pack/build" | while read -r lib; do cp -L "$lib" "$pack/lib/"; done
  du -sh "$pack"
  exit 0
fi

if [ "$mode" = run ]; then
  P=$PWD/$pack
  out=${OUT:-out/gpu-mpi}
  sections=${SECTIONS:-gpu cpu codecs segment trace tests}
  mkdir -p "$out"
  export OPAL_PREFIX=$P/ompi/usr PMIX_LIBDIR=$P/ompi/usr/lib/x86_64-linux-gnu/pmix2/lib OMPI_MCA_mca_base_param_files=$P/ompi/etc/openmpi/openmpi-mca-params.conf
  export LD_LIBRARY_PATH="$P/lib:$P/build/lib:${LD_LIBRARY_PATH:-}" PATH="$P/ompi/usr/bin:$PATH" PIXFLOW_MPIEXEC=$P/ompi/usr/bin/mpiexec
  # As root; components whose libraries this machine lacks (InfiniBand, UCX) are skipped quietly;
  # one host: shared memory, no ssh.
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mca_base_component_show_load_errors=0 \
    OMPI_MCA_btl=self,vader OMPI_MCA_pml=ob1 OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_plm=isolated
  export PIXFLOW_PLUGIN_PATH= PIXFLOW_PLUGIN_CACHE=/tmp/pixflow-plugin-cache.json PIXFLOW_SOURCE_DIR=$PWD
  px=$P/build/bin/pixflow
  gpus=$(nvidia-smi -L | wc -l)
  {
    "$px" --version; nvidia-smi -L; echo "cores: $(nproc)"; mpirun --version | head -1
  } | tee "$out/machine.txt"
  status=0
  has() { [[ " $sections " == *" $1 "* ]]; }
  # wall and CPU time (user + system of every process the command waited for, ranks included)
  timed() {
    python3 - "$@" <<'PY'
import resource, subprocess, sys, time
t0 = time.monotonic(); c0 = resource.getrusage(resource.RUSAGE_CHILDREN)
rc = subprocess.call(sys.argv[1:])
t1 = time.monotonic(); c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
cpu = (c1.ru_utime - c0.ru_utime) + (c1.ru_stime - c0.ru_stime)
print(f"  exit {rc}, wall {t1 - t0:.2f} s, cpu {cpu:.2f} s", flush=True)
sys.exit(rc)
PY
  }
  W=/tmp/gpu-mpi; rm -rf "$W"; mkdir -p "$W/in" "$W/small" "$W/seg-in"
  printf '[nodes.src]\nop = "synth"\npattern = "shapes"\nwidth = 2048\nheight = 2048\nchannels = 3\ndtype = "u8"\n[nodes.out]\nop = "save"\ninput = "src"\npath = "x.ppm"\n' > "$W/gen.toml"
  if has gpu || has cpu; then
    for i in $(seq -w 1 64); do "$px" run "$W/gen.toml" --set src.seed=$((10#$i)) --set out.path="$W/in/img$i.ppm" > /dev/null & done; wait
  fi
  if has gpu; then
    echo "== gpu: 64 x 2048^2 PPM, batch-blur-pool, --backend cuda"
    args=(run pipelines/batch-blur-pool.toml --backend cuda --set out.path=x.ppm --input "$W/in" --quiet)
    for r in 1 2 3; do
      rm -rf "$W/one" "$W/all" "$W/ranks"
      echo "round $r: one process, --devices 0"; timed "$px" "${args[@]}" --devices 0 --output "$W/one" --report "$out/one.json"
      echo "round $r: one process, --devices all"; timed "$px" "${args[@]}" --devices all --output "$W/all" --report "$out/all.json"
      echo "round $r: mpirun -np $gpus --bind-to none"; timed mpirun -np "$gpus" --bind-to none "$px" "${args[@]}" --output "$W/ranks" --report "$out/ranks.json"
    done 2>&1 | tee "$out/rounds.txt"
    rm -rf "$W/bound"
    echo "mpirun -np $gpus, Open MPI's default binding"; timed mpirun -np "$gpus" "$px" "${args[@]}" --output "$W/bound" --report "$out/bound.json"
    for d in all ranks bound; do diff -rq "$W/one" "$W/$d" > /dev/null && echo "outputs of $d: identical to one process" || { echo "outputs of $d DIFFER"; status=1; }; done
    python3 - "$out" <<'PY' || true
import json, sys
for f in ("one", "all", "ranks", "bound"):
    r = json.load(open(f"{sys.argv[1]}/{f}.json"))
    print(f, "wall_s %.2f" % r["wall_s"], "setup_s", r.get("setup_s"), "images_s", r.get("images_s"), r["workers"], [(x["rank"], x["images"], x["threads"]) for x in r.get("ranks", [])])
PY
    for i in $(seq -w 1 16); do "$px" run "$W/gen.toml" --set src.seed=$((10#$i)) --set src.width=$((100 + 7 * 10#$i)) --set src.height=$((90 + 5 * 10#$i)) --set out.path="$W/small/s$i.ppm" > /dev/null; done
    small=(run pipelines/batch-blur-pool.toml --set out.path=x.ppm --input "$W/small" --quiet)
    "$px" "${small[@]}" --output "$W/s1"
    for np in 2 4; do
      mpirun -np "$np" --oversubscribe "$px" "${small[@]}" --output "$W/s$np" || status=1
      diff -rq "$W/s1" "$W/s$np" > /dev/null && echo "-np $np: identical to one process" || { echo "-np $np: outputs DIFFER"; status=1; }
    done
  fi
  if has cpu; then
    echo "== cpu: 64 x 2048^2 PPM, batch-blur-pool, --backend cpu, $(nproc) cores: MPI's overhead"
    args=(run pipelines/batch-blur-pool.toml --backend cpu --set out.path=x.ppm --input "$W/in" --quiet)
    for r in 1 2 3; do
      rm -rf "$W/c1" "$W/c2"
      echo "round $r: one process"; timed "$px" "${args[@]}" --output "$W/c1" --report "$out/cpu-one.json"
      echo "round $r: mpirun -np 2 --bind-to none"; timed mpirun -np 2 --bind-to none "$px" "${args[@]}" --output "$W/c2" --report "$out/cpu-np2.json"
    done 2>&1 | tee "$out/cpu-rounds.txt"
    diff -rq "$W/c1" "$W/c2" > /dev/null && echo "cpu -np 2: identical to one process" || { echo "cpu -np 2: outputs DIFFER"; status=1; }
    echo "2 images of 64 x 64 (the fixed cost):"
    mkdir -p "$W/tiny"; for i in 1 2; do "$px" run "$W/gen.toml" --set src.seed=$i --set src.width=64 --set src.height=64 --set out.path="$W/tiny/t$i.ppm" > /dev/null; done
    for r in 1 2 3; do
      rm -rf "$W/t1" "$W/t2"
      timed "$px" run pipelines/batch-blur-pool.toml --backend cpu --set out.path=x.ppm --input "$W/tiny" --quiet --output "$W/t1"
      timed mpirun -np 2 --bind-to none "$px" run pipelines/batch-blur-pool.toml --backend cpu --set out.path=x.ppm --input "$W/tiny" --quiet --output "$W/t2"
    done
  fi
  if has codecs; then
    echo "== codecs: the CUDA batch against its codec limit (PPM, PNG, JPEG)"
    mkdir -p /dev/shm/pf
    for pipe in pipelines/batch-blur-pool.toml copy; do
      PIXFLOW=$px CODEC_LIMIT=$P/build/bin/codec_limit BACKEND=cuda FORMATS="ppm png jpg" PIPELINE=$pipe OUT=/dev/shm/pf \
        WORK=/tmp/pixflow-bench-codecs scripts/bench-codecs.sh 2>&1 | tee -a "$out/codecs.txt" || status=1
    done
  fi
  if has segment; then
    echo "== segment: 128 x 1000^2 RGB PPM, batch-segment (chan_vese, 500 iterations), --backend cuda"
    for i in $(seq -w 1 128); do "$px" run "$W/gen.toml" --set src.seed=$((10#$i)) --set src.width=1000 --set src.height=1000 --set out.path="$W/seg-in/img$i.ppm" > /dev/null & done; wait
    args=(run pipelines/batch-segment.toml --backend cuda --input "$W/seg-in" --quiet)
    for r in 1 2 3; do
      rm -rf "$W/g1" "$W/g2" "$W/gr"
      echo "round $r: one process, --devices 0"; timed "$px" "${args[@]}" --devices 0 --output "$W/g1" --report "$out/seg-one.json"
      echo "round $r: one process, --devices all"; timed "$px" "${args[@]}" --devices all --output "$W/g2" --report "$out/seg-all.json"
      echo "round $r: mpirun -np $gpus --bind-to none"; timed mpirun -np "$gpus" --bind-to none "$px" "${args[@]}" --output "$W/gr" --report "$out/seg-ranks.json"
      python3 - "$out" <<'PY' || true
import json, sys
for f in ("seg-one", "seg-all", "seg-ranks"):
    r = json.load(open(f"{sys.argv[1]}/{f}.json"))
    print(" ", f, "wall_s %.3f" % r["wall_s"], "setup_s", r.get("setup_s"), "images_s", r.get("images_s"), "images/s after setup", r.get("images_per_s_after_setup"))
PY
    done 2>&1 | tee "$out/seg-rounds.txt"
    for d in g2 gr; do diff -rq "$W/g1" "$W/$d" > /dev/null && echo "segment $d: identical to one GPU" || { echo "segment $d: outputs DIFFER"; status=1; }; done
    # where the time of one process on every GPU goes: each GPU's busy share and first span
    rm -rf "$W/g2"
    "$px" "${args[@]}" --devices all --output "$W/g2" --report "$out/seg-all-trace.json" --trace "$out/seg-all.trace.json"
    python3 scripts/bench/trace_summary.py "$out/seg-all.trace.json" 2>&1 | tee "$out/seg-all-trace.txt"
  fi
  if has trace; then
    echo "== trace: the CUDA blur-pool batch, 64 and 256 images, --trace"
    mkdir -p "$W/tr64" "$W/tr256"
    for i in $(seq -w 1 64); do "$px" run "$W/gen.toml" --set src.seed=$((10#$i)) --set out.path="$W/tr64/img$i.ppm" > /dev/null & done; wait
    for k in 1 2 3 4; do for f in "$W"/tr64/*.ppm; do cp "$f" "$W/tr256/k${k}_$(basename "$f")"; done; done
    for set in tr64 tr256; do
      for r in 1 2; do
        rm -rf /dev/shm/pf-trace
        "$px" run pipelines/batch-blur-pool.toml --backend cuda --set out.path=x.ppm --input "$W/$set" --output /dev/shm/pf-trace \
          --quiet --report "$out/$set.json" --trace "$out/$set.trace.json"
        python3 -c "import json, sys; r = json.load(open(sys.argv[1])); print(sys.argv[2], 'round', sys.argv[3], 'wall %.3f s, setup %.3f s, images %.3f s: %.0f img/s after setup; pinned buffers made %d, in flight at most %d' % (r['wall_s'], r['setup_s'], r['images_s'], r['images_per_s_after_setup'], r['pinned_buffers'], r['max_in_flight_seen']))" "$out/$set.json" "$set" "$r"
      done
      python3 scripts/bench/trace_summary.py "$out/$set.trace.json"
    done
    rm -rf /dev/shm/pf-trace
  fi
  if has tests; then
    echo "== tests: pixflow_mpi_tests under the packed mpiexec"
    "$P/build/bin/pixflow_mpi_tests" ${MPI_TEST_FILTER:+--gtest_filter=$MPI_TEST_FILTER} > "$out/mpi-tests.log" 2>&1 || status=1
    grep -E '^\[  (FAILED|PASSED|SKIPPED) +\]' "$out/mpi-tests.log" | tail -20
  fi
  echo "gpu-mpi-check: status $status"
  exit $status
fi

echo "usage: scripts/gpu-mpi-check.sh pack | run" >&2
exit 1
