# needed.sh - sourced by the GPU tests: what a program of the GPU runtime
# may need at run time (a GPU machine has CUDA and little else).
#
#   needed PROG      prints PROG's NEEDED shared libraries, one line
#   foreign LIBS...  prints those not allowed (empty: all allowed)

needed() {
    readelf -d "$1" | sed -n 's/.*Shared library: \[\(.*\)\].*/\1/p' | tr '\n' ' '
}

foreign() {
    local lib bad=
    for lib in "$@"; do
        case $lib in
            libcudnn.so*|libcublas.so*|libcublasLt.so*|libcudart.so*|libcjson.so*|libm.so*|libc.so*|libpthread.so*) ;;
            libasan.so*|libubsan.so*) ;; # a build with --enable-sanitizers
            *) bad="$bad $lib" ;;
        esac
    done
    echo "${bad# }"
}
