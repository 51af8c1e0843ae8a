#!/usr/bin/env python3
"""profile_parts.py - re-measure part of a GPU profile: choose the kernels
to profile again, then merge their new lines into the profile.

    profile_parts.py select MODEL.kernels.tsv [--ops OP,...] [--match REGEX] [--missing-from P.gpu.tsv]
                     -o PART.kernels.tsv
    (on the GPU) autotm-gpu-profile PART.kernels.tsv -o PART.gpu.tsv
    profile_parts.py merge P.gpu.tsv PART.gpu.tsv [--note TEXT] -o P.gpu.tsv

select keeps the kernels (lines of `autotmc profile --backend gpu
--export`) whose op is among --ops and whose signature matches --match
(either may be left out), or that P.gpu.tsv lacks; merge puts
PART's kernel and algo lines in place of P's for the same kernels, adds
the kernels P lacks, and keeps P's machine and link (move) lines; the two
profiles' machine lines must be equal. --note adds a comment line that
says what was measured again, and when."""
import argparse
import re
import sys


def kernel_key(line):
    """The kernel a profile line is about (kernel and algo lines), else None."""
    f = line.split("\t")
    return f[1] if f[0] in ("kernel", "algo") and len(f) > 1 else None


def select(args):
    lines = open(args.kernels).read().splitlines()
    ops = set(args.ops.split(",")) if args.ops else set()
    have = set()
    if args.missing_from:
        have = {kernel_key(l) for l in open(args.missing_from) if l.startswith("kernel\t")}
    match = re.compile(args.match) if args.match else None

    def chosen(l):
        sig = l.split("\t")[0]
        if not ops and not match:
            return False
        return (not ops or sig.split(" ", 1)[0] in ops) and (not match or match.search(sig))

    keep = [l for l in lines if l and not l.startswith("#") and
            (chosen(l) or (args.missing_from and l.split("\t")[0] not in have))]
    with open(args.o, "w") as f:
        f.write("".join(l + "\n" for l in lines if l.startswith("# autotm gpu kernels")))
        f.write(f"# {len(keep)} kernels of {args.kernels}\n")
        f.write("".join(l + "\n" for l in keep))
    print(f"{args.o}: {len(keep)} kernels", file=sys.stderr)


def merge(args):
    old = open(args.profile).read().splitlines()
    part = open(args.part).read().splitlines()
    mo = [l for l in old if l.startswith("machine\t")]
    mp = [l for l in part if l.startswith("machine\t")]
    if mo != mp:
        sys.exit(f"profile_parts.py: the machine lines differ:\n  {mo}\n  {mp}")
    redone = {kernel_key(l) for l in part if l.startswith("kernel\t")}
    out = []
    for l in old:
        k = kernel_key(l) or (l[2:].rsplit(" ", 2)[0] if l.startswith("# conv") else None)
        if k in redone:
            continue
        out.append(l)
    if args.note:
        out.append("# " + args.note)
    out += [l for l in part if kernel_key(l) or l.startswith("# conv")]
    with open(args.o, "w") as f:
        f.write("".join(l + "\n" for l in out))
    print(f"{args.o}: {len(redone)} kernels measured again or added", file=sys.stderr)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("select")
    s.add_argument("kernels")
    s.add_argument("--ops", help="comma-separated op names (batchnorm,maxpool_bwd)")
    s.add_argument("--match", metavar="REGEX",
                   help="a regular expression the kernel's signature matches ('kh=1 kw=1 sh=1 sw=1 groups=1\\b')")
    s.add_argument("--missing-from", metavar="PROFILE")
    s.add_argument("-o", required=True)
    m = sub.add_parser("merge")
    m.add_argument("profile")
    m.add_argument("part")
    m.add_argument("--note")
    m.add_argument("-o", required=True)
    args = p.parse_args()
    select(args) if args.cmd == "select" else merge(args)


if __name__ == "__main__":
    main()
