#!/usr/bin/env python3
"""torch_gpu.py - the training step of the torchvision models that examples/*.net
define layer for layer, in PyTorch on the GPU, timed the way bench/gpu/run.sh
compares it with autotmc's GPU programs.

    python3 torch_gpu.py --model resnet152 --batch 64 --mode eager --iters 10 --warmup 3

prints one JSON object: status ("ok", "oom" or "error"), the median, min and
max step time over --iters timed steps after --warmup untimed ones, every step
time and loss, the peak device memory over the timed steps
(torch.cuda.max_memory_allocated and max_memory_reserved; the warm-up's,
where cudnn.benchmark tries algorithms, is peak_device_bytes_warmup), the
TF32 flags, cudnn.benchmark and the versions.  An out-of-memory error
prints status "oom" and exits 0 (eager resnet200 at batch 576 does not fit
in an H200's 141 GB); any other error prints status "error" and exits 1.

Models (num_classes 1000 unless --classes):
  vgg19         torchvision.models.vgg19()               examples/vgg19.net
  resnet50      torchvision.models.resnet50()            examples/resnet50.net
  resnet152     torchvision.models.resnet152()           examples/resnet152.net
  resnet200     torchvision ResNet(Bottleneck, [3, 24, 36, 3])  examples/resnet200.net
  densenet201   torchvision.models.densenet201()         examples/densenet201.net
  inception_v3  torchvision.models.inception_v3(aux_logits=False, init_weights=False)
                                                         examples/inception_v3.net
  test_vgg      examples/test_vgg.net (as bench/torch_step.py), for smoke tests
SGD with the .net file's lr and momentum (DEFAULTS below), no weight decay;
cross-entropy on N(0, 1) input and random labels, the same batch every step.
  gpt2          examples/gpt2.net (GPT-2 small: 12 layers, 12 heads, 768 wide,
                vocabulary 50257; --size is the sequence length, default
                1024) as nanoGPT writes it: bench/torch_step.py's gpt_model,
                which the package has beside this script.  AdamW (lr 6e-4,
                betas 0.9, 0.95, weight decay 0.1), gradients clipped to norm
                1, cross-entropy of every position; random token ids and
                next-token ids, the same batch every step.

Modes:
  eager         the plain training step (gpt2: attention by
                F.scaled_dot_product_attention, whichever kernel PyTorch picks)
  composed      (GPTs) eager with attention written out as autotmc composes
                it: matmul, causal mask, softmax, matmul
  compile       the model under torch.compile (inductor, its default mode:
                forward and backward compiled, the optimizer eager); the
                warm-up steps compile, so give --warmup 3 or more
  save_on_cpu   forward under torch.autograd.graph.save_on_cpu(pin_memory=True):
                every tensor saved for backward goes to pinned host memory
  checkpoint    (ResNets) torch.utils.checkpoint.checkpoint_sequential over the
                network as an nn.Sequential of its children with the bottleneck
                blocks flattened, --segments (default 8) segments,
                use_reentrant=False (on a PyTorch whose checkpoint_sequential
                lacks use_reentrant, the same segmentation with
                checkpoint(use_reentrant=False))
  sac           selective activation checkpointing: the whole forward through
                torch.utils.checkpoint.checkpoint(use_reentrant=False) with
                create_selective_checkpoint_contexts and a policy that saves
                the outputs of matrix products, convolutions and attention
                (mm, addmm, bmm, convolution, scaled dot product attention)
                and recomputes everything else in the backward pass
  budgetNN      torch.compile with torch._functorch.config.activation_memory_budget
                = NN / 100 (budget50: 0.5): the compiler's min-cut chooses what
                to recompute so that the saved activations are about that
                fraction of what eager saves

--precision bf16 runs the forward pass and the loss under
torch.autocast(device_type=--device, dtype=torch.bfloat16), as users train in
mixed precision (the backward pass follows autocast's casts); autotmc's
counterpart is --precision bf16.

TF32 is off (torch.backends.cuda.matmul.allow_tf32 = False,
torch.backends.cudnn.allow_tf32 = False) unless --tf32, as in autotmc's
programs (which turn it on only with AUTOTM_TF32=1).  cudnn.benchmark is on
unless --no-cudnn-benchmark: cuDNN then times its algorithms for each
convolution in the first (warm-up) step, which is what users of PyTorch do;
autotmc's runtime takes cuDNN's heuristic choice without timing.

A step is: zero_grad(set_to_none=True), forward, loss, backward,
optimizer.step(); on the GPU it is timed with CUDA events recorded before
and after it, then synchronised.  --device cpu (with a small --batch and
--size) exists to test the script without a GPU.
"""

import argparse
import inspect
import json
import os
import platform
import re
import statistics
import sys
import time
import traceback

DEFAULTS = {  # the .net files' defaults: batch, size, classes, lr, momentum
    "vgg19": (64, 224, 1000, 0.01, 0.9),
    "resnet50": (32, 224, 1000, 0.1, 0.9),
    "resnet152": (32, 224, 1000, 0.1, 0.9),
    "resnet200": (32, 224, 1000, 0.1, 0.9),
    "densenet201": (32, 224, 1000, 0.1, 0.9),
    "inception_v3": (32, 299, 1000, 0.045, 0.9),
    "test_vgg": (8, 32, 10, 0.01, 0.9),
    "gpt2": (8, 1024, 50257, 0.0006, 0.0),  # size: positions; classes: the vocabulary
}
GPT = ("gpt2",)
RESNETS = ("resnet50", "resnet152", "resnet200")


def build_model(args):
    from torch import nn
    if args.model in GPT:
        here = os.path.dirname(os.path.abspath(__file__))
        sys.path[:0] = [here, os.path.dirname(here)]  # the package has torch_step.py beside this script, the tree in bench/
        from torch_step import gpt_model
        return gpt_model(12, 12, 768, args.classes, args.size, composed=args.mode == "composed")
    if args.model == "test_vgg":
        def stage(cin, cout):
            return [nn.Conv2d(cin, cout, 3, padding=1), nn.ReLU(),
                    nn.Conv2d(cout, cout, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2)]
        s = args.size
        return nn.Sequential(*stage(3, 16), *stage(16, 32), *stage(32, 64), nn.Flatten(),
                             nn.Linear(64 * (s // 8) * (s // 8), 128), nn.ReLU(),
                             nn.Linear(128, args.classes))
    import torchvision.models as tvm
    from torchvision.models.resnet import ResNet, Bottleneck
    k = args.classes
    if args.model == "vgg19":
        return tvm.vgg19(num_classes=k)
    if args.model == "resnet50":
        return tvm.resnet50(num_classes=k)
    if args.model == "resnet152":
        return tvm.resnet152(num_classes=k)
    if args.model == "resnet200":
        return ResNet(Bottleneck, [3, 24, 36, 3], num_classes=k)
    if args.model == "densenet201":
        return tvm.densenet201(num_classes=k)
    if args.model == "inception_v3":
        return tvm.inception_v3(num_classes=k, aux_logits=False, init_weights=False)
    raise SystemExit(f"torch_gpu.py: unknown model {args.model!r}")


def resnet_sequential(model):
    """A torchvision ResNet as one nn.Sequential of its children, the
    bottleneck blocks of layer1..layer4 flattened (what checkpoint_sequential
    splits into segments).  Same modules, same parameters, same forward."""
    from torch import nn
    layers = [model.conv1, model.bn1, model.relu, model.maxpool]
    for stage in (model.layer1, model.layer2, model.layer3, model.layer4):
        layers += list(stage.children())
    layers += [model.avgpool, nn.Flatten(1), model.fc]
    return nn.Sequential(*layers)


def make_selective(torch, model):
    """forward(x) = model(x) under selective activation checkpointing (mode sac)."""
    from functools import partial
    from torch.utils.checkpoint import CheckpointPolicy, checkpoint, create_selective_checkpoint_contexts
    aten = torch.ops.aten
    save = {aten.mm.default, aten.addmm.default, aten.bmm.default, aten.convolution.default}
    for name in ("_scaled_dot_product_flash_attention", "_scaled_dot_product_efficient_attention",
                 "_scaled_dot_product_cudnn_attention"):
        if hasattr(aten, name):
            save.add(getattr(aten, name).default)

    def policy(ctx, op, *args, **kwargs):
        return CheckpointPolicy.MUST_SAVE if op in save else CheckpointPolicy.PREFER_RECOMPUTE
    context = partial(create_selective_checkpoint_contexts, policy)
    return lambda x: checkpoint(model, x, use_reentrant=False, context_fn=context)


def make_checkpointed(torch, seq, segments):
    """forward(x) = seq(x) through checkpoint_sequential(use_reentrant=False)."""
    from torch.utils import checkpoint as cp
    params = inspect.signature(cp.checkpoint_sequential).parameters
    if "use_reentrant" in params:
        return (lambda x: cp.checkpoint_sequential(seq, segments, x, use_reentrant=False),
                "torch.utils.checkpoint.checkpoint_sequential(use_reentrant=False)")

    # An older PyTorch (1.13): checkpoint_sequential is reentrant only.  The
    # same segmentation (segments of len // segments modules, the last one
    # not checkpointed), each segment through checkpoint(use_reentrant=False).
    funcs = list(seq.children())
    size = len(funcs) // segments

    def run(start, end):
        def f(x):
            for j in range(start, end + 1):
                x = funcs[j](x)
            return x
        return f

    def forward(x):
        end = -1
        for start in range(0, size * (segments - 1), size):
            end = start + size - 1
            x = cp.checkpoint(run(start, end), x, use_reentrant=False)
        return run(end + 1, len(funcs) - 1)(x)
    return forward, "torch.utils.checkpoint.checkpoint(use_reentrant=False) per segment " \
                    "(this PyTorch's checkpoint_sequential has no use_reentrant)"


def is_oom(torch, e):
    oom_type = getattr(torch.cuda, "OutOfMemoryError", None)
    if oom_type is not None and isinstance(e, oom_type):
        return True
    msg = str(e)
    return isinstance(e, RuntimeError) and ("out of memory" in msg or "CUDNN_STATUS_ALLOC_FAILED" in msg
                                            or "CUBLAS_STATUS_ALLOC_FAILED" in msg)


def versions(torch, device):
    v = {"torch": torch.__version__, "python": platform.python_version(),
         "cuda": torch.version.cuda, "cudnn": None, "device_name": None}
    try:
        import torchvision
        v["torchvision"] = torchvision.__version__
    except ImportError:
        v["torchvision"] = None
    if device == "cuda" and torch.cuda.is_available():
        v["cudnn"] = torch.backends.cudnn.version()
        v["device_name"] = torch.cuda.get_device_name()
        free, total = torch.cuda.mem_get_info()
        v["device_memory_total"] = total
    return v


def kernel_times(torch, step, path, steps=2):
    """Each GPU kernel's launches and device time a step, from torch.profiler
    over `steps` steps, into `path` (JSON: kernels sorted by time, and the
    total of every kernel a step)."""
    from torch.profiler import ProfilerActivity, profile
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(steps):
            step()
        torch.cuda.synchronize()
    kernels = {}
    for e in prof.events():
        if e.device_type != torch.autograd.DeviceType.CUDA:
            continue
        k = kernels.setdefault(e.name, [0, 0.0])
        k[0] += 1
        k[1] += e.time_range.elapsed_us()
    rows = sorted(({"name": n, "launches": c / steps, "seconds": t * 1e-6 / steps}
                   for n, (c, t) in kernels.items()), key=lambda r: -r["seconds"])
    with open(path, "w") as f:
        json.dump({"steps": steps, "total_seconds": sum(r["seconds"] for r in rows), "kernels": rows}, f, indent=1)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True, choices=sorted(DEFAULTS))
    p.add_argument("--batch", type=int)
    p.add_argument("--size", type=int, help="image size (default: the .net file's)")
    p.add_argument("--classes", type=int)
    p.add_argument("--lr", type=float)
    p.add_argument("--momentum", type=float)
    p.add_argument("--mode", default="eager",
                   help="eager, save_on_cpu, checkpoint, composed, compile, sac or budgetNN (see above)")
    p.add_argument("--segments", type=int, default=8, help="checkpoint segments (default 8)")
    p.add_argument("--iters", type=int, default=10, help="timed steps (default 10)")
    p.add_argument("--warmup", type=int, default=3, help="untimed steps first (default 3)")
    p.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    p.add_argument("--precision", default="fp32", choices=["fp32", "bf16"],
                   help="bf16: the forward pass and the loss under torch.autocast(dtype=torch.bfloat16)")
    p.add_argument("--tf32", action="store_true", help="allow TF32 (default: off)")
    p.add_argument("--no-cudnn-benchmark", dest="cudnn_benchmark", action="store_false",
                   help="cudnn.benchmark = False (default: True)")
    p.add_argument("--deterministic", action="store_true",
                   help="cudnn.deterministic = True: only cuDNN algorithms that give the same bits every "
                        "run, as autotmc's (default: False, PyTorch's default)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--threads", type=int, help="CPU threads (torch.set_num_threads)")
    p.add_argument("--kernels", metavar="FILE",
                   help="after the timed steps, profile 2 more (torch.profiler) and write each "
                        "GPU kernel's name, launches and device time a step to FILE (JSON)")
    args = p.parse_args()
    batch, size, classes, lr, momentum = DEFAULTS[args.model]
    args.batch = args.batch or batch
    args.size = args.size or size
    args.classes = args.classes or classes
    args.lr = lr if args.lr is None else args.lr
    args.momentum = momentum if args.momentum is None else args.momentum
    budget = re.fullmatch(r"budget(\d+)", args.mode)
    if args.mode not in ("eager", "save_on_cpu", "checkpoint", "composed", "compile", "sac") and \
            not (budget and 0 < int(budget.group(1)) <= 100):
        p.error(f"--mode {args.mode}: not a mode (eager, save_on_cpu, checkpoint, composed, compile, sac, budgetNN)")
    if args.mode == "checkpoint" and args.model not in RESNETS:
        p.error(f"--mode checkpoint is for the ResNets ({', '.join(RESNETS)})")
    if args.mode == "composed" and args.model not in GPT:
        p.error(f"--mode composed is for the GPTs ({', '.join(GPT)})")

    import torch  # after parsing, so that --help is quick
    import torch.nn.functional as F

    out = {"framework": "pytorch", "model": args.model, "batch": args.batch, "size": args.size,
           "classes": args.classes, "mode": args.mode, "device": args.device, "precision": args.precision,
           "lr": args.lr, "momentum": args.momentum, "warmup": args.warmup,
           "iterations": args.iters, "status": "error"}
    if args.mode == "checkpoint":
        out["segments"] = args.segments
    if budget:
        out["activation_memory_budget"] = int(budget.group(1)) / 100
    dev = torch.device(args.device)
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.backends.cuda.matmul.allow_tf32 = args.tf32
    torch.backends.cudnn.allow_tf32 = args.tf32
    torch.backends.cudnn.benchmark = args.cudnn_benchmark
    torch.backends.cudnn.deterministic = args.deterministic
    out["tf32_matmul"] = torch.backends.cuda.matmul.allow_tf32
    out["tf32_cudnn"] = torch.backends.cudnn.allow_tf32
    out["cudnn_benchmark"] = torch.backends.cudnn.benchmark
    out["cudnn_deterministic"] = torch.backends.cudnn.deterministic
    cuda = args.device == "cuda"
    if cuda and not torch.cuda.is_available():
        out["error"] = "no CUDA device (torch.cuda.is_available() is False)"
        print(json.dumps(out))
        return 1
    out.update(versions(torch, args.device))

    times, losses = [], []

    def peak():
        if cuda:
            out["peak_device_bytes"] = torch.cuda.max_memory_allocated()
            out["peak_reserved_bytes"] = torch.cuda.max_memory_reserved()

    try:
        torch.manual_seed(args.seed)
        model = build_model(args)
        out["parameters"] = sum(q.numel() for q in model.parameters())
        model.to(dev).train()
        forward = model
        if args.mode == "compile" or budget:  # inductor, forward and backward; the first steps compile
            if budget:
                import torch._functorch.config as fconfig
                fconfig.activation_memory_budget = out["activation_memory_budget"]
            forward = torch.compile(model)
        if args.mode == "sac":
            forward = make_selective(torch, model)
        if args.mode == "checkpoint":
            seq = resnet_sequential(model)
            out["sequential_modules"] = len(seq)
            forward, out["checkpoint_impl"] = make_checkpointed(torch, seq, args.segments)
        if args.model in GPT:
            x = torch.randint(0, args.classes, (args.batch, args.size), device=dev)
            y = torch.randint(0, args.classes, (args.batch, args.size), device=dev)
            opt = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.95), weight_decay=0.1)
        else:
            x = torch.randn(args.batch, 3, args.size, args.size, device=dev)
            y = torch.randint(0, args.classes, (args.batch,), device=dev)
            opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)

        def loss_of(x, y):
            with torch.autocast(device_type=args.device, dtype=torch.bfloat16, enabled=args.precision == "bf16"):
                out = forward(x)
                return F.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1))

        def step():
            opt.zero_grad(set_to_none=True)
            if args.mode == "save_on_cpu":
                with torch.autograd.graph.save_on_cpu(pin_memory=True):
                    loss = loss_of(x, y)
            else:
                loss = loss_of(x, y)
            loss.backward()
            if args.model in GPT:
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            return loss

        if cuda:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        for i in range(args.warmup + args.iters):
            if cuda:
                start.record()
                loss = step()
                end.record()
                end.synchronize()
                t = 1e-3 * start.elapsed_time(end)
            else:
                t0 = time.perf_counter()
                loss = step()
                t = time.perf_counter() - t0
            losses.append(loss.item())
            if i >= args.warmup:
                times.append(t)
            if cuda and i + 1 == args.warmup:
                # cudnn.benchmark tries algorithms (and their workspaces) in
                # the first step: the peak of the timed steps is the step's own
                out["peak_device_bytes_warmup"] = torch.cuda.max_memory_allocated()
                torch.cuda.reset_peak_memory_stats()
        peak()
    except Exception as e:  # noqa: BLE001 - every failure becomes a record
        peak()
        out["steps_done"] = len(losses)
        out["losses"] = losses
        out["error"] = f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}"
        if is_oom(torch, e):
            out["status"] = "oom"
            print(json.dumps(out))
            return 0
        traceback.print_exc(file=sys.stderr)
        print(json.dumps(out))
        return 1

    if args.kernels and cuda:
        out["kernels_file"] = args.kernels
        kernel_times(torch, step, args.kernels)
    out.update({"status": "ok", "median": statistics.median(times), "min": min(times),
                "max": max(times), "step_times": times, "losses": losses})
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
