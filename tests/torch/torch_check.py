#!/usr/bin/env python3
"""Cross-check autotmc's reference interpreter against PyTorch.

For a .net model: autotmc writes its training graph as JSON and its initial
weights as safetensors; this script builds the same forward computation in
PyTorch from the graph's forward nodes (torch.nn.functional, one call per
op), loads the same weights, feeds the same input and labels, trains
ITERS steps with the model's optimizer as torch.optim has it (SGD or
AdamW; the learning-rate schedule computed here from its documented
formula and set before each step; torch.nn.utils.clip_grad_norm_ when the
optimizer clips), and compares the loss of every step, every final weight
and every batchnorm running statistic (which PyTorch updates in the same
training-mode calls) with what `autotmc interpret` (or, with --run, the
compiled program) printed and saved.

With --f64 both sides compute in float64 (`autotmc interpret --f64`),
which isolates the rules from float32 rounding. With --composed every
autotmc command gets `--attention composed` (attention as products and a
softmax, as PyTorch's autograd differentiates them, rather than the fused
kernel's own backward).

With --bf16 autotmc trains in bf16 (`--precision bf16`) and PyTorch
replays the same graph, its casts included, with its own bf16 kernels: the
rounding points are the same and only the order of sums differs. With
--autocast autotmc trains in bf16 and PyTorch runs the float32 graph under
torch.autocast("cpu", dtype=torch.bfloat16), whose rules differ from
autotmc's in places (PyTorch's CPU autocast runs softmax and layernorm in
bf16): what a user compares against. A tensor or loss beyond RTOL agrees
as in float32: against float64, within twice PyTorch's own difference.

Agreement: every loss, and every saved tensor in max-norm, within RTOL
relative (||a - b||_inf <= RTOL * ||b||_inf; a running mean relative to
its running deviation where that is larger: stat_scale). When the optimizer clips,
some step's gradient norm must exceed the clip (or the check would not
test clipping). In float32 a tensor beyond RTOL still agrees if it is as
accurate as PyTorch's: against PyTorch in float64 from the same start,
within twice PyTorch float32's own difference (AdamW divides each
gradient by its running magnitude, so a gradient that is rounding noise,
such as that of attention's key bias, exactly 0 in exact arithmetic,
moves its weight by steps that no float32 computation repeats); each
such tensor is printed with both differences. So does a loss beyond
RTOL: PyTorch's float32 losses of MobileNetV2 at 64x64 drift from
float64 by percents where ours stay within 1e-5.

With --reference, PyTorch's side only, for a program run elsewhere (a GPU
machine without the compiler, tests/gpu/remote): WORKDIR gets the input,
the labels and the initial weights as above, PyTorch's losses in float32
and float64 (ref.json) and its final tensors (torch-f32.safetensors and
torch-f64.safetensors, in those types); tests/torch/agree.py then judges a
program's results record and saved weights by the rules above.

With --eval, the evaluation instead (check_eval): the compiled program
trained with --val, then `autotmc eval --outputs`, against PyTorch's
model.eval() from the saved weights and running statistics; the
arguments after -- place the training program (--limit, --optimizer).

usage: torch_check.py AUTOTMC MODEL.net WORKDIR [ITERS] [RTOL] [--f64|--bf16|--autocast] [--run] [-DNAME=VALUE...]
       torch_check.py AUTOTMC MODEL.net WORKDIR ITERS RTOL --reference
       torch_check.py AUTOTMC MODEL.net WORKDIR 0 RTOL --eval [-- PLACEMENT...]
-DNAME=VALUE overrides a model parameter in every autotmc command.
Exit status: 0 agreement, 1 disagreement, 77 PyTorch or NumPy missing.
"""
import json
import math
import struct
import subprocess
import sys

try:
    import numpy as np
    import torch
    import torch.nn.functional as F
except ImportError as e:  # the test is skipped where PyTorch is missing
    print(f"skipping: {e}")
    sys.exit(77)

import agree  # tests/torch/agree.py, beside this script


def read_safetensors(path):
    """name -> array (float32, or float64 for F64 tensors): agree.py's reader"""
    return {name: np.frombuffer(a, dtype="<f4" if a.typecode == "f" else "<f8").reshape(shape).copy()
            for name, (shape, a) in agree.read_safetensors(path).items()}


def write_safetensors(path, tensors, dtype):
    """name -> array, every one saved as dtype ("F32" or "F64")"""
    npt = {"F32": "<f4", "F64": "<f8"}[dtype]
    header, blobs, at = {}, [], 0
    for name, v in tensors.items():
        b = np.ascontiguousarray(v, dtype=npt).tobytes()
        header[name] = {"dtype": dtype, "shape": list(v.shape), "data_offsets": [at, at + len(b)]}
        blobs.append(b)
        at += len(b)
    head = json.dumps(header).encode()
    head += b" " * (-len(head) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(head)) + head + b"".join(blobs))


DEFINES = []  # -D NAME=VALUE arguments (and --composed's --attention composed), given to every autotmc command
PRECISION = []  # --precision bf16 for the autotmc commands of --bf16 and --autocast
AUTOCAST = False  # --autocast: PyTorch's forward under torch.autocast("cpu", bfloat16)


def run(cmd):
    cmd = cmd + DEFINES
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"command failed ({r.returncode}): {' '.join(cmd)}\n{r.stderr}")
    return r.stdout


class FusedAttention(torch.autograd.Function):
    """autotmc's fused attention over x [N, T, 3 H D] (q, k, v side by side) -> y [N, T, H D], as its
    kernels define it: bf16 data computed in float32 and rounded once, y as stored (bf16 in a bf16 graph)
    and the rows' log-sum-exp saved, and the backward's rowsum(dy y) from that stored y, as flash
    attention's is (what autograd through a composed softmax would take from its float32 probabilities)."""

    @staticmethod
    def heads(x, shape):
        nb, h, tt, d = shape
        return [x[:, :, i * h * d:(i + 1) * h * d].reshape(nb, tt, h, d).transpose(1, 2) for i in range(3)]

    @staticmethod
    def scores(q, k, alpha, causal):
        s = alpha * (q @ k.mT)
        if causal:
            tt = s.shape[-1]
            s = s.masked_fill(torch.ones(tt, tt, dtype=torch.bool).triu(1), float("-inf"))
        return s

    @staticmethod
    @torch.autocast("cpu", enabled=False)
    def forward(ctx, x, shape, alpha, causal):
        wide = torch.float64 if x.dtype == torch.float64 else torch.float32
        q, k, v = FusedAttention.heads(x.to(wide), shape)
        s = FusedAttention.scores(q, k, alpha, causal)
        lse = torch.logsumexp(s, dim=-1, keepdim=True)
        nb, h, tt, d = shape
        y = (torch.exp(s - lse) @ v).transpose(1, 2).reshape(nb, tt, h * d).to(x.dtype)
        ctx.save_for_backward(x, y, lse)
        ctx.shape, ctx.alpha, ctx.causal = shape, alpha, causal
        return y

    @staticmethod
    @torch.autocast("cpu", enabled=False)
    def backward(ctx, dy):
        x, y, lse = ctx.saved_tensors
        wide = lse.dtype
        nb, h, tt, d = ctx.shape
        q, k, v = FusedAttention.heads(x.to(wide), ctx.shape)
        split = lambda t: t.to(wide).reshape(nb, tt, h, d).transpose(1, 2)
        dyh, yh = split(dy), split(y)
        p = torch.exp(FusedAttention.scores(q, k, ctx.alpha, ctx.causal) - lse)
        ds = ctx.alpha * p * (dyh @ v.mT - (dyh * yh).sum(-1, keepdim=True))
        grads = [ds @ k, ds.mT @ q, p.mT @ dyh]
        dx = torch.cat([g.transpose(1, 2).reshape(nb, tt, h * d) for g in grads], dim=-1)
        return dx.to(x.dtype), None, None, None


def forward(graph, weights, stats, x, y, train=True):
    """Execute the forward nodes of the graph; returns the loss and the
    tensors. In training mode batchnorm updates its running statistics in
    `stats` (tensor id -> buffer) as torch.nn.BatchNorm2d does; in
    evaluation mode (train False) it normalises by them and dropout is the
    identity, as model.eval() has it."""
    t = {graph["input"]: x, graph["labels"]: y}
    t.update(weights)
    running = {}  # a batchnorm's batch-mean tensor id -> (running_mean, running_var, num_batches_tracked) ids
    for n in graph["nodes"]:
        if n["op"] == "batchnorm_stats":
            running[n["inputs"][3]] = n["inputs"][:3]
    for n in graph["nodes"]:
        if n["phase"] != "forward":
            continue
        op, a, ins = n["op"], n["attrs"], [t[i] for i in n["inputs"]]
        if op == "conv2d":
            r = F.conv2d(ins[0], ins[1], ins[2] if len(ins) == 3 else None, stride=a["stride"],
                         padding=a["pad"], groups=a["groups"])
        elif op == "dense":
            r = F.linear(ins[0], ins[1], ins[2] if len(ins) >= 3 else None)
        elif op == "maxpool":
            r = F.max_pool2d(ins[0], a["kernel"], a["stride"], a["pad"])
        elif op == "avgpool":
            r = F.avg_pool2d(ins[0], a["kernel"], a["stride"], a["pad"], count_include_pad=True)
        elif op == "globalavgpool":
            r = F.adaptive_avg_pool2d(ins[0], 1)
        elif op == "batchnorm":
            rm, rv, count = running[n["outputs"][1]]
            r = F.batch_norm(ins[0], stats[rm], stats[rv], ins[1], ins[2], training=train, momentum=0.1,
                             eps=a["eps"])
            stats[count] += train
        elif op == "relu":
            r = F.relu(ins[0])
        elif op == "sigmoid":
            r = torch.sigmoid(ins[0])
        elif op == "tanh":
            r = torch.tanh(ins[0])
        elif op == "layernorm":
            # PyTorch 1.13's CPU layer_norm wants its weights in the input's type (autocast: bf16)
            w, b = (ins[1].to(ins[0].dtype), ins[2].to(ins[0].dtype)) if AUTOCAST else (ins[1], ins[2])
            r = F.layer_norm(ins[0], (ins[0].shape[-1],), w, b, eps=a["eps"])
            if graph["tensors"][n["outputs"][0]]["dtype"] == "bf16" and r.dtype != torch.float64:
                r = r.to(torch.bfloat16)  # a bf16 program's cast after it, folded in by autotmc's fusion pass
        elif op == "gelu":
            r = F.gelu(ins[0], approximate="tanh")
        elif op in ("relu6", "hardsigmoid", "hardswish", "silu"):
            r = getattr(F, op)(ins[0])
        elif op == "softmax":
            r = F.softmax(ins[0], dim=-1)
        elif op == "transpose":
            r = ins[0].transpose(1, 2)
        elif op == "broadcast":  # the class token in front of every sample
            r = ins[0].expand(*a["shape"])
        elif op == "clamp":
            r = torch.clamp(ins[0], a["lo"], a["hi"])
        elif op == "mul":
            r = ins[0] * ins[1]
        elif op == "mean":
            r = ins[0].mean(dim=a["axis"])
        elif op == "slice":
            r = ins[0].narrow(a["axis"], a["offset"], a["shape"][a["axis"]])
        elif op == "reshape":
            r = ins[0].reshape([ins[0].shape[0]] + a["shape"][1:])  # the batch may differ (evaluation)
        elif op == "add":
            r = ins[0]
            for other in ins[1:]:
                r = r + other
        elif op == "concat":
            r = torch.cat(ins, dim=a["axis"])
        elif op == "dropout" and not train:  # a second input: the residual added (autotmc's fusion pass)
            r = F.dropout(ins[0], a["p"], training=False)
        elif op == "softmax_crossentropy":
            r = -(ins[1] * F.log_softmax(ins[0], dim=1)).sum(dim=1).mean()
        elif op == "embedding":
            r = F.embedding(ins[0], ins[1])
        elif op == "position_embedding":
            r = ins[0] + ins[1][:ins[0].shape[1]]
        elif op == "matmul":
            r = a["alpha"] * ((ins[0].mT if a["trans_a"] else ins[0]) @ (ins[1].mT if a["trans_b"] else ins[1]))
        elif op == "split_heads":  # as nanoGPT: a view [N, T, H, D], then heads first
            _, h, _, d = a["shape"]
            part = ins[0][:, :, a["offset"]:a["offset"] + h * d]
            r = part.reshape(part.shape[0], part.shape[1], h, d).transpose(1, 2)
        elif op == "merge_heads":
            r = torch.cat([v.transpose(1, 2).reshape(v.shape[0], v.shape[2], -1) for v in ins], dim=-1)
        elif op == "causal_softmax":  # a mask of -inf above the diagonal
            k = ins[0].shape[-1]
            mask = torch.ones(k, k, dtype=torch.bool).triu(1)
            r = F.softmax(ins[0].masked_fill(mask, float("-inf")), dim=-1)
        elif op == "attention":  # fused (autotmc's flash attention): its own forward and backward
            r = FusedAttention.apply(ins[0], a["shape"], a["alpha"], bool(a.get("causal")))
        elif op == "cast":  # a bf16 program's (--bf16): to its output's type; the float64 reference: none
            bf16 = graph["tensors"][n["outputs"][0]]["dtype"] == "bf16"
            r = ins[0] if ins[0].dtype == torch.float64 else ins[0].to(torch.bfloat16 if bf16 else torch.float32)
        elif op in ("softmax_crossentropy_ids", "softmax_crossentropy_ids_grad"):  # _grad: the loss fused with its
            z = ins[0].float() if ins[0].dtype == torch.bfloat16 else ins[0]  # gradient (autograd's here), bf16
            r = F.cross_entropy(z.reshape(-1, z.shape[-1]), ins[1].reshape(-1))  # logits computed in float32
        elif op == "dense_crossentropy_ids_grad":  # the output layer fused with its loss (autotmc's fusion pass)
            z = F.linear(ins[0], ins[1])
            r = F.cross_entropy(z.reshape(-1, z.shape[-1]), ins[2].reshape(-1))
        else:
            sys.exit(f"torch_check.py: op {op} is not supported by the cross-check (dropout is random)")
        if a.get("post_act"):  # an activation fused onto the op (autotmc's fusion pass)
            r = {"relu": F.relu, "sigmoid": torch.sigmoid, "tanh": torch.tanh}[a["post_act"]](r)
        if (op == "dense" and len(ins) == 4) or (op == "dropout" and len(ins) == 2):  # a residual add folded in
            r = r + ins[-1]
        t[n["outputs"][-1 if op in ("softmax_crossentropy_ids_grad", "dense_crossentropy_ids_grad") else 0]] = r
    return t[graph["loss"]], t


def id_ranges(graph):
    """Integer (i32) input and labels: tensor id -> the ids they hold are in [0, this), from their users."""
    tensors, out = graph["tensors"], {}
    for n in graph["nodes"]:
        if n["op"] == "embedding":
            out[n["inputs"][0]] = tensors[n["inputs"][1]]["shape"][0]
        elif n["op"] in ("softmax_crossentropy_ids", "softmax_crossentropy_ids_grad"):
            out[n["inputs"][1]] = tensors[n["inputs"][0]]["shape"][-1]
        elif n["op"] == "dense_crossentropy_ids_grad":
            out[n["inputs"][2]] = tensors[n["inputs"][1]]["shape"][0]
    return out


def schedule_lr(opt, t):
    """The learning rate of step t (from 0), as docs/language.md defines the schedules."""
    s, lr = opt["schedule"], opt["lr"]
    if s["kind"] == "cosine":
        if t < s["warmup"]:
            return lr * (t + 1) / s["warmup"]
        if t >= s["steps"]:
            return s["floor"]
        p = (t - s["warmup"]) / (s["steps"] - s["warmup"])
        return s["floor"] + (lr - s["floor"]) * 0.5 * (1 + math.cos(math.pi * p))
    if s["kind"] == "step_decay":
        return lr * s["gamma"] ** (t // s["every"])
    return lr


def make_optimizer(opt, params):
    if opt["name"] == "adamw":
        return torch.optim.AdamW(params, lr=opt["lr"], betas=(opt["beta1"], opt["beta2"]), eps=opt["eps"],
                                 weight_decay=opt["weight_decay"])
    return torch.optim.SGD(params, lr=opt["lr"], momentum=opt["momentum"], weight_decay=opt["weight_decay"],
                           nesterov=opt["nesterov"])


def relative(a, b, scale=0.0):
    """||a - b||_inf / max(||b||_inf, scale)"""
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), scale, 1e-30))


def stat_scale(name, final):
    """The scale a batchnorm's running mean is judged at: its running
    standard deviation. A mean that is 0 in exact arithmetic (the channels
    after a 1x1 convolution of batchnorm's zero-mean output, as in
    MobileNetV2's blocks) is rounding noise, and a shift of the mean
    matters as a fraction of the deviation it is divided by."""
    if not name.endswith(".running_mean"):
        return 0.0
    var = final.get(name[:-len("running_mean")] + "running_var")
    return float(np.sqrt(np.max(np.abs(var)))) if var is not None else 0.0


def check_eval(autotmc, model, work, rtol, place):
    """Train the compiled program a few steps on a random dataset with
    --val (the evaluation pass placed with `place`, the arguments after
    --), evaluate the saved weights with `autotmc eval --outputs`, and
    compare with PyTorch's model.eval() from the same weights and running
    statistics: every output, the loss and the accuracy. Also: the last
    evaluation during training is the standalone evaluation's, and
    evaluating during training leaves its losses bitwise unchanged."""
    # --autocast: PyTorch runs the float32 graph under its autocast; --bf16: the bf16 graph, casts and all
    graph = json.loads(run([autotmc, "graph", "--train", "--json", model] + (PRECISION if not AUTOCAST else [])))
    tensors = graph["tensors"]
    xshape = tensors[graph["input"]]["shape"]
    nclass = tensors[graph["labels"]]["shape"][1]
    batch = xshape[0]
    rng = np.random.default_rng(99)
    sets = {"train": 4 * batch, "val": 2 * batch + batch // 2 + 1}  # the validation set ends in a partial batch
    for d, n in sets.items():
        subprocess.run(["mkdir", "-p", f"{work}/{d}"], check=True)
        np.save(f"{work}/{d}/x.npy", rng.standard_normal([n] + xshape[1:]).astype(np.float32))
        np.save(f"{work}/{d}/y.npy", rng.integers(0, nclass, size=n).astype(np.int64))
    common = [autotmc, "run", model, "--data", f"{work}/train", "--epochs", "2"] + place
    run(common + ["--results", f"{work}/plain.json"])
    out = run(common + ["--val", f"{work}/val", "--eval-every", "3", "--results", f"{work}/train.json",
                        "--save-weights", f"{work}/final.safetensors"])
    print("\n".join(line for line in out.splitlines() if line.startswith("eval at")))
    run([autotmc, "eval", model, "--weights", f"{work}/final.safetensors", "--data", f"{work}/val",
         "--outputs", f"{work}/out.npy", "--results", f"{work}/eval.json"])
    plain, trained, ev = (json.load(open(f"{work}/{f}.json")) for f in ("plain", "train", "eval"))
    bad = 0
    if plain["losses"] != trained["losses"]:
        print("the training losses differ with --val: evaluating disturbed the training")
        bad += 1
    steps = [e["step"] for e in trained["evaluations"]]
    want = [3, 6, 8]
    if steps != want:
        print(f"evaluations at steps {steps}, expected {want}")
        bad += 1
    a, b = trained["evaluations"][-1], ev["evaluations"][0]
    if (a["loss"], a["accuracy"]) != (b["loss"], b["accuracy"]):
        print(f"the last evaluation of the run ({a['loss']}, {a['accuracy']}) is not autotmc eval's "
              f"({b['loss']}, {b['accuracy']})")
        bad += 1

    weights = read_safetensors(f"{work}/final.safetensors")
    by_name = {tensors[i]["name"]: i for i in range(len(tensors))}
    w = {by_name[k]: torch.tensor(v) for k, v in weights.items()}
    x = torch.tensor(np.load(f"{work}/val/x.npy"))
    cls = torch.tensor(np.load(f"{work}/val/y.npy"))
    y = F.one_hot(cls, nclass).float()
    with torch.no_grad():
        _, t = forward(graph, w, w, x, y, train=False)
    loss_node = next(n for n in graph["nodes"] if n["op"] == "softmax_crossentropy")
    logits = t[loss_node["inputs"][0]]
    loss = F.cross_entropy(logits, cls).item()
    acc = float((logits.argmax(1) == cls).double().mean())
    ours = np.load(f"{work}/out.npy")
    rel = relative(ours, logits.numpy())
    print(f"outputs {list(ours.shape)}: largest relative difference {rel:.2e}")
    print(f"loss: autotmc {b['loss']:.9g}  pytorch {loss:.9g}; accuracy: autotmc {b['accuracy']:.6f}  "
          f"pytorch {acc:.6f}")
    if list(ours.shape) != [sets["val"], nclass] or rel > rtol:
        print(f"outputs: expected {sets['val']} x {nclass} within {rtol:g}")
        bad += 1
    hits = int((logits.argmax(1) == cls).sum())
    if abs(b["loss"] - loss) > rtol * abs(loss) or round(b["accuracy"] * b["samples"]) != hits or \
            b["samples"] != sets["val"]:
        print(f"loss, accuracy or samples ({b['samples']}) differ")
        bad += 1
    print("agreement" if not bad else f"DISAGREEMENT beyond {rtol:g}")
    sys.exit(1 if bad else 0)


def train_torch(graph, init, by_name, x, cls, nclass, iters, dtype, verbose):
    """PyTorch's training from the initial weights `init` (name -> array):
    the losses, the final weights and statistics (tensor id -> tensor) and
    how many steps' gradient norms exceeded the clip."""
    tensors, ids = graph["tensors"], id_ranges(graph)
    weights = {by_name[k]: torch.tensor(v, dtype=dtype, requires_grad=True) for k, v in init.items()
               if tensors[by_name[k]]["kind"] == "weight"}
    # batchnorm's running statistics, saved with the weights: PyTorch's buffers
    stats = {by_name[k]: torch.tensor(v, dtype=dtype) for k, v in init.items()
             if tensors[by_name[k]]["kind"] != "weight"}
    want = {"running_mean": 0.0, "running_var": 1.0, "num_batches_tracked": 0.0}
    for i, v in stats.items():
        name = tensors[i]["name"]
        if not any(name.endswith("." + s) and np.all(v.numpy() == w) for s, w in want.items()):
            sys.exit(f"initial statistic {name} is not PyTorch's: {v}")
    opt = graph["optimizer"]
    optim = make_optimizer(opt, list(weights.values()))
    xt = torch.tensor(x, dtype=torch.int64 if graph["input"] in ids else dtype)
    yt = torch.tensor(cls) if graph["labels"] in ids else F.one_hot(torch.tensor(cls), nclass).to(dtype)
    losses = []
    clipped = 0
    for t in range(iters):
        optim.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=AUTOCAST):
            loss, _ = forward(graph, weights, stats, xt, yt)
        loss.backward()
        if opt["clip"] > 0:
            norm = float(torch.nn.utils.clip_grad_norm_(list(weights.values()), opt["clip"]))
            if verbose:
                print(f"step {t + 1}: gradient norm {norm:.6g}, clip {opt['clip']:g}")
            clipped += norm > opt["clip"]
        for group in optim.param_groups:
            group["lr"] = schedule_lr(opt, t)
        optim.step()
        losses.append(loss.item())
    return losses, weights, stats, clipped


def reference(graph, work, x, cls, nclass, iters, rtol):
    """PyTorch's training in float32 and float64 from WORKDIR's initial
    weights, input and labels: its losses into WORKDIR/ref.json, its final
    tensors (weights and running statistics, by name) into
    WORKDIR/torch-f32.safetensors and WORKDIR/torch-f64.safetensors."""
    tensors = graph["tensors"]
    init = read_safetensors(f"{work}/init.safetensors")
    by_name = {tensors[i]["name"]: i for i in range(len(tensors))}
    ref = {"model": graph.get("model"), "iters": iters, "rtol": rtol, "clip": graph["optimizer"]["clip"],
           "torch": torch.__version__}
    for dtype, tag in ((torch.float32, "f32"), (torch.float64, "f64")):
        losses, weights, stats, clipped = train_torch(graph, init, by_name, x, cls, nclass, iters, dtype,
                                                      tag == "f32")
        final = {name: (stats[i] if i in stats else weights[i]).detach().numpy() for name, i in by_name.items()
                 if name in init}
        write_safetensors(f"{work}/torch-{tag}.safetensors", final, tag.upper())
        ref["losses_" + tag] = losses
        ref["clipped_steps_" + tag] = clipped
    with open(f"{work}/ref.json", "w") as f:
        json.dump(ref, f, indent=1)
    print(f"{work}: PyTorch's losses in float32 {ref['losses_f32']}, {len(init)} tensors")
    sys.exit(0)


def main():
    argv = sys.argv[1:]
    place = argv[argv.index("--") + 1:] if "--" in argv else []
    argv = argv[:argv.index("--")] if "--" in argv else argv
    flags = {a for a in argv if a.startswith("--")}
    DEFINES.extend(a for a in argv if a.startswith("-D"))
    args = [a for a in argv if not a.startswith("-")]
    if len(args) < 3 or flags - {"--f64", "--run", "--eval", "--reference", "--bf16", "--autocast", "--composed"}:
        sys.exit(__doc__)
    if "--composed" in flags:
        DEFINES.extend(["--attention", "composed"])
    global AUTOCAST
    AUTOCAST = "--autocast" in flags
    bf16 = AUTOCAST or "--bf16" in flags
    if bf16:
        PRECISION.extend(["--precision", "bf16"])
    autotmc, model, work = args[:3]
    iters = int(args[3]) if len(args) > 3 else 3
    rtol = float(args[4]) if len(args) > 4 else 1e-4
    if "--eval" in flags:
        check_eval(autotmc, model, work, rtol, place)
    f64 = "--f64" in flags
    dtype = torch.float64 if f64 else torch.float32
    # --autocast: PyTorch runs the float32 graph under its autocast; --bf16: the bf16 graph, casts and all
    graph = json.loads(run([autotmc, "graph", "--train", "--json", model] + (PRECISION if not AUTOCAST else [])))
    tensors = graph["tensors"]
    xshape = tensors[graph["input"]]["shape"]
    ids = id_ranges(graph)
    nclass = ids.get(graph["labels"]) or tensors[graph["labels"]]["shape"][1]

    rng = np.random.default_rng(1234)
    if graph["input"] in ids:  # token ids
        x = rng.integers(0, ids[graph["input"]], size=xshape).astype(np.int32)
    else:
        x = rng.standard_normal(xshape).astype(np.float32)
    cls = rng.integers(0, nclass, size=tensors[graph["labels"]]["shape"] if graph["labels"] in ids
                       else xshape[0]).astype(np.int64)
    np.save(f"{work}/x.npy", x)
    np.save(f"{work}/y.npy", cls)

    run([autotmc, "interpret", model, "--iters", "0", "--save-weights", f"{work}/init.safetensors"] + PRECISION)
    if "--reference" in flags:
        reference(graph, work, x, cls, nclass, iters, rtol)
    out = run([autotmc, "run" if "--run" in flags else "interpret", model, "--iters", str(iters),
               "--weights", f"{work}/init.safetensors", "--input", f"{work}/x.npy", "--labels", f"{work}/y.npy",
               "--save-weights", f"{work}/final.safetensors"] + (["--f64"] if f64 else []) + PRECISION)
    ours = [float(line.split("loss")[1].split()[0]) for line in out.splitlines() if line.startswith("step")]

    init = read_safetensors(f"{work}/init.safetensors")
    by_name = {tensors[i]["name"]: i for i in range(len(tensors))}
    opt = graph["optimizer"]
    theirs, weights, stats, clipped = train_torch(graph, init, by_name, x, cls, nclass, iters, dtype, True)
    exact = None  # float32: PyTorch in float64, trained once a tensor differs beyond rtol

    bad = 0
    for i, (a, b) in enumerate(zip(ours, theirs)):
        rel = abs(a - b) / abs(b)
        print(f"step {i + 1}: autotmc {a:.9g}  pytorch {b:.9g}  relative difference {rel:.2e}")
        if rel > rtol and not f64:
            # as accurate as PyTorch: the same rule as for the tensors below (a network whose
            # batch statistics are of few elements, such as MobileNetV2 at 64x64, is sensitive
            # enough that PyTorch's float32 steps drift from float64 by more than rtol)
            if exact is None:
                exact = train_torch(graph, init, by_name, x, cls, nclass, iters, torch.float64, False)
            e = exact[0][i]
            print(f"step {i + 1}: against float64 {e:.9g}: autotmc {abs(a - e) / abs(e):.2e}, "
                  f"pytorch {abs(b - e) / abs(e):.2e}")
            if abs(a - e) <= 2 * abs(b - e):
                rel = 0.0
        bad += rel > rtol
    if len(ours) != iters:
        print(f"autotmc printed {len(ours)} losses, expected {iters}")
        bad += 1
    final = read_safetensors(f"{work}/final.safetensors")
    worst = (0.0, "")
    nstats = 0
    for name, v in final.items():
        i = by_name[name]
        nstats += i in stats
        w = (stats[i] if i in stats else weights[i]).detach().numpy()
        scale = stat_scale(name, final)
        rel = relative(v, w, scale)
        if rel > rtol and not f64:
            if exact is None:
                exact = train_torch(graph, init, by_name, x, cls, nclass, iters, torch.float64, False)
            # As accurate as PyTorch: against float64, within twice PyTorch float32's own error
            # (where a gradient is rounding noise, as that of attention's key bias, whose exact
            # value is 0, AdamW's normalisation makes steps of it that float32 cannot repeat).
            e = (exact[2][i] if i in stats else exact[1][i]).detach().numpy()
            ours64, theirs64 = relative(v, e, scale), relative(w, e, scale)
            print(f"{name}: relative difference {rel:.2e}; against float64 autotmc {ours64:.2e}, "
                  f"pytorch {theirs64:.2e}")
            if ours64 <= 2 * theirs64:
                rel = 0.0
        worst = max(worst, (rel, name))
        bad += rel > rtol
    has_bn = any(n["op"] == "batchnorm" for n in graph["nodes"])
    if nstats != len(stats) or (has_bn and nstats == 0):
        print(f"{nstats} running statistics saved, {len(stats)} in the model")
        bad += 1
    print(f"{len(final)} tensors after {iters} steps ({nstats} of them running statistics): largest relative "
          f"difference {worst[0]:.2e} ({worst[1]})")
    if opt["clip"] > 0 and not clipped:
        print(f"no step's gradient norm exceeded the clip {opt['clip']:g}: clipping was not tested")
        bad += 1
    print("agreement" if not bad else f"DISAGREEMENT beyond {rtol:g}")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
