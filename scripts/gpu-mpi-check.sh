#!/usr/bin/env bash
# Batches over MPI ranks on a GPU machine that has no Open MPI (issue 17), in two halves:
#   scripts/gpu-mpi-check.sh pack   here: build pixflow with CUDA (sm_90) and MPI, OpenImageIO off,
#                                   into build-gpu-mpi/, and pack it into gpu-pack-mpi/ (git-ignored,
#                                   about 34 MB) with Open MPI 4.1.4 and PMIx from this Debian 12:
#                                   their trees under their absolute paths (ompi/), their libraries
#                                   and pixflow's in lib/
#   scripts/gpu-mpi-check.sh run    on the GPU machine (root), from the repository root, with
#                                   gpu-pack-mpi/ carried: copies the Open MPI and PMIx trees to
#                                   their paths (nothing that exists is overwritten), then 64
#                                   synthetic 2048x2048 RGB PPM through pipelines/batch-blur-pool.toml
#                                   --backend cuda, 3 rounds of: one process on GPU 0, one process
#                                   on every GPU (--devices all), mpirun -np <GPUs> --bind-to none
#                                   (one rank per GPU); once with Open MPI's default binding; the
#                                   outputs compared; then -np 2 and -np 4 on 16 small images
#                                   against one process, bit for bit. Logs and reports go to $OUT.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-}
pack=gpu-pack-mpi

if [ "$mode" = pack ]; then
  [ -d /usr/local/cuda/bin ] && export PATH="$PATH:/usr/local/cuda/bin"
  cmake -S . -B build-gpu-mpi -G Ninja -DCMAKE_BUILD_TYPE=Release -DPIXFLOW_WITH_OIIO=OFF -DPIXFLOW_BUILD_TESTS=OFF \
        -DPIXFLOW_WITH_PYTHON=OFF -DPIXFLOW_WITH_CUDA=ON -DPIXFLOW_WITH_MPI=ON -DCMAKE_CUDA_ARCHITECTURES=90
  cmake --build build-gpu-mpi -j"$(nproc)"
  rm -rf "$pack" && mkdir -p "$pack/lib" "$pack/build" "$pack/ompi/usr/bin" "$pack/ompi/usr/lib/x86_64-linux-gnu" \
    "$pack/ompi/usr/share" "$pack/ompi/etc"
  cp -r build-gpu-mpi/bin build-gpu-mpi/lib "$pack/build/"
  cp -L /usr/bin/orterun /usr/bin/orted "$pack/ompi/usr/bin/"
  ln -s orterun "$pack/ompi/usr/bin/mpirun"
  cp -a /usr/lib/x86_64-linux-gnu/openmpi /usr/lib/x86_64-linux-gnu/pmix2 "$pack/ompi/usr/lib/x86_64-linux-gnu/"
  rm -rf "$pack"/ompi/usr/lib/x86_64-linux-gnu/{openmpi,pmix2}/include
  find "$pack/ompi" \( -name '*java*' -o -name '*.a' \) -print0 | xargs -0 rm -rf
  cp -r /usr/share/openmpi "$pack/ompi/usr/share/"
  cp -r /etc/openmpi "$pack/ompi/etc/"
  # Every shared library needed, except the C/C++ runtime and the driver the other machine has.
  find "$pack/build" "$pack/ompi" -type f \( -name '*.so*' -o -perm -u+x \) -print0 | xargs -0 ldd 2>/dev/null |
    awk '/=> \// {print $3}' | sort -u |
    grep -vE '/(libc|libm|libstdc\+\+|libgcc_s|libpthread|libdl|librt|libcuda|ld-linux[^/]*)\.so' |
    grep -v -e "$PWD/build-gpu-mpi" -e "$PWD/$pack/build" | while read -r lib; do cp -L "$lib" "$pack/lib/"; done
  du -sh "$pack"
  exit 0
fi

if [ "$mode" = run ]; then
  P=$PWD/$pack
  out=${OUT:-out/gpu-mpi}
  mkdir -p "$out"
  for d in usr/lib/x86_64-linux-gnu usr/share etc; do cp -rn "$P/ompi/$d/." "/$d/"; done
  export LD_LIBRARY_PATH="$P/lib:$P/build/lib:${LD_LIBRARY_PATH:-}" PATH="$P/ompi/usr/bin:$PATH"
  # As root; components whose libraries this machine lacks (InfiniBand, UCX) are skipped quietly;
  # one host: shared memory, no ssh.
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mca_base_component_show_load_errors=0 \
    OMPI_MCA_btl=self,vader OMPI_MCA_pml=ob1 OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_plm=isolated
  export PIXFLOW_PLUGIN_PATH= PIXFLOW_PLUGIN_CACHE=/tmp/pixflow-plugin-cache.json
  px=$P/build/bin/pixflow
  gpus=$(nvidia-smi -L | wc -l)
  {
    "$px" --version; nvidia-smi -L; echo "cores: $(nproc)"; mpirun --version | head -1
  } | tee "$out/machine.txt"
  W=/tmp/gpu-mpi; rm -rf "$W"; mkdir -p "$W/in" "$W/small"
  printf '[nodes.src]\nop = "synth"\npattern = "shapes"\nwidth = 2048\nheight = 2048\nchannels = 3\ndtype = "u8"\n[nodes.out]\nop = "save"\ninput = "src"\npath = "x.ppm"\n' > "$W/gen.toml"
  for i in $(seq -w 1 64); do "$px" run "$W/gen.toml" --set src.seed=$((10#$i)) --set out.path="$W/in/img$i.ppm" > /dev/null & done; wait
  args=(run pipelines/batch-blur-pool.toml --backend cuda --set out.path=x.ppm --input "$W/in" --quiet)
  timed() { local t0; t0=$(date +%s.%N); "$@"; echo "  exit $?, $(awk "BEGIN { printf \"%.2f\", $(date +%s.%N) - $t0 }") s"; }
  for r in 1 2 3; do
    rm -rf "$W/one" "$W/all" "$W/ranks"
    echo "round $r: one process, --devices 0"; timed "$px" "${args[@]}" --devices 0 --output "$W/one" --report "$out/one.json"
    echo "round $r: one process, --devices all"; timed "$px" "${args[@]}" --devices all --output "$W/all" --report "$out/all.json"
    echo "round $r: mpirun -np $gpus --bind-to none"; timed mpirun -np "$gpus" --bind-to none "$px" "${args[@]}" --output "$W/ranks" --report "$out/ranks.json"
  done 2>&1 | tee "$out/rounds.txt"
  rm -rf "$W/bound"
  echo "mpirun -np $gpus, Open MPI's default binding"; timed mpirun -np "$gpus" "$px" "${args[@]}" --output "$W/bound" --report "$out/bound.json"
  status=0
  for d in all ranks bound; do diff -rq "$W/one" "$W/$d" > /dev/null && echo "outputs of $d: identical to one process" || { echo "outputs of $d DIFFER"; status=1; }; done
  python3 - "$out" <<'PY' || true
import json, sys
for f in ("one", "all", "ranks", "bound"):
    r = json.load(open(f"{sys.argv[1]}/{f}.json"))
    print(f, "wall_s %.2f" % r["wall_s"], r["workers"], [(x["rank"], x["images"], x["threads"]) for x in r.get("ranks", [])])
PY
  for i in $(seq -w 1 16); do "$px" run "$W/gen.toml" --set src.seed=$((10#$i)) --set src.width=$((100 + 7 * 10#$i)) --set src.height=$((90 + 5 * 10#$i)) --set out.path="$W/small/s$i.ppm" > /dev/null; done
  small=(run pipelines/batch-blur-pool.toml --set out.path=x.ppm --input "$W/small" --quiet)
  "$px" "${small[@]}" --output "$W/s1"
  for np in 2 4; do
    mpirun -np "$np" --oversubscribe "$px" "${small[@]}" --output "$W/s$np" || status=1
    diff -rq "$W/s1" "$W/s$np" > /dev/null && echo "-np $np: identical to one process" || { echo "-np $np: outputs DIFFER"; status=1; }
  done
  exit $status
fi

echo "usage: scripts/gpu-mpi-check.sh pack | run" >&2
exit 1
