#!/usr/bin/env python3
"""Decode speed of expert parallelism over 1-16 machines, from measured costs (docs/distributed.md).

A model, not a measurement: it takes this machine's measured rates (the RAM rate at which the
engine turns weight bytes into a decoded token, the disk's read rate, and the software cost of one
layer exchange between ranks, all printed by `stormo bench`, in one process and under mpirun) and
a network's latency and bandwidth, and prints the decode tokens per second of one sequence for
DeepSeek-V3 (FP8) and GLM-5 (BF16) over N machines, each with the same RAM, disk and rates.

Per decode step of B rows (B = 1: one sequence; more: batched sequences or a verify block), with
uniform routing (the pessimistic case for a cache), tokens per second = B / t_step, where weights
stream from RAM at ram_rate(B): the one-row rate times the fraction the kernels keep at B rows
(measured with bench-kernels; a CPU turns compute-bound as B grows):
  t_step(N) = t_dense + max_r t_experts(r) + L * t_exchange(N)
  t_dense       = dense bytes per token / ram_rate(B)                  (rank 0 alone: attention, shared
                                                                      experts, dense layers, head)
  t_experts(r)  = E_r * h_r / ram_rate(B) + E_r * (1 - h_r) / disk_rate (rank r's routed experts)
  E_r           = u * L * b * n_r / n     routed bytes rank r reads per step (n_r of n experts)
  u             = n * (1 - (1 - k/n)^B)   experts a layer's B rows choose between them
  h_r           = min(1, M_r / (n_r * L * b))   the share of its experts rank r holds in RAM
                                                (uniform routing: hit rate = resident share)
  t_exchange(N) = 2 * latency + overhead + B * (o * 4h + k * (N-1)/N * 4h) / bandwidth
  o             = (N - 1) * (1 - (1 - 1/N)^k)   owners other than rank 0 a token's top-k touch
b is one expert's bytes, L the MoE layers, k the experts per token, h the hidden size; rows travel
as float32. The exchanges of a layer are not overlapped with other layers (as built), and the ranks'
expert work per layer is taken as its mean (uniform routing spreads a layer's k experts; with
k = 8 over N <= 8 the busiest rank's share exceeds the mean, which the model leaves out). M_r is a
machine's RAM for experts: its RAM less the dense part on rank 0, less a reserve on every rank.

    scripts/distributed-model.py --ram-rate 35e9 --disk-rate 3.6e9 --overhead-us 12 --ram-gib 24 \
        --rows 1,4,16 --rows-rate fp8:4=0.71 --rows-rate fp8:16=0.19 --rows-rate bf16:4=0.57 --rows-rate bf16:16=0.30
"""
import argparse
import math

GIB = 1024 ** 3


def deepseek_v3():
    # config.json of deepseek-ai/DeepSeek-V3: hidden 7168, 61 layers (3 dense, intermediate 18432),
    # 256 routed experts (top-8, moe_intermediate 2048) + 1 shared, MLA (q_lora 1536, kv_lora 512,
    # 128 heads, nope 128, rope 64, v 128), vocab 129280; FP8 weights with 128x128 block scales.
    h, mi, heads = 7168, 2048, 128
    fp8 = 1.0 + 4.0 / (128 * 128)  # a byte a weight and a float scale a 128x128 block
    attention = (h * 1536 + 1536 * heads * 192 + h * 576 + 512 * heads * (128 + 128) + heads * 128 * h) * fp8
    expert = 3 * h * mi * fp8
    dense = 61 * attention + 58 * expert + 3 * 3 * h * 18432 * fp8 + 129280 * h * 2  # + shared, dense FFNs, BF16 head
    return dict(name="DeepSeek-V3 (FP8)", format="fp8", hidden=h, moe_layers=58, experts=256, top_k=8, expert_bytes=expert,
                dense_bytes=dense)


def glm5():
    # config.json of zai-org/GLM-5: hidden 6144, 78 layers (3 dense, intermediate 12288), 256 routed
    # experts (top-8, moe_intermediate 2048) + 1 shared, MLA (q_lora 2048, kv_lora 512, 64 heads,
    # nope 192, rope 64, v 256), DSA indexer (32 heads of 128), vocab 154880; BF16 weights.
    h, mi, heads = 6144, 2048, 64
    attention = (h * 2048 + 2048 * heads * 256 + h * 576 + 512 * heads * (192 + 256) + heads * 256 * h
                 + 2048 * 32 * 128 + h * 128 + h * 32) * 2
    expert = 3 * h * mi * 2
    dense = 78 * attention + 75 * expert + 3 * 3 * h * 12288 * 2 + 154880 * h * 2
    return dict(name="GLM-5 (BF16)", format="bf16", hidden=h, moe_layers=75, experts=256, top_k=8, expert_bytes=expert,
                dense_bytes=dense)


def step_seconds(shape, machines, args, network, rows):
    n, k, L, b, h = shape["experts"], shape["top_k"], shape["moe_layers"], shape["expert_bytes"], shape["hidden"]
    touched = n * (1.0 - (1.0 - k / n) ** rows)  # experts a layer's rows choose between them
    reserve = args.reserve_gib * GIB
    ram_rate = args.ram_rate * args.fractions.get((shape["format"], rows), 1.0)
    t_dense = shape["dense_bytes"] / ram_rate
    slowest = 0.0
    for r in range(machines):
        n_r = (r + 1) * n // machines - r * n // machines
        memory = args.ram_gib * GIB - reserve - (shape["dense_bytes"] if r == 0 else 0.0)
        held = n_r * L * b
        hit = min(1.0, max(0.0, memory) / held) if held > 0 else 1.0
        routed = touched * L * b * n_r / n
        slowest = max(slowest, routed * hit / ram_rate + routed * (1.0 - hit) / args.disk_rate)
    t_net = 0.0
    if machines > 1:
        latency_s, bits_per_s = network
        owners = (machines - 1) * (1.0 - (1.0 - 1.0 / machines) ** k)
        wire_bytes = rows * (owners * 4 * h + k * (machines - 1) / machines * 4 * h)
        t_net = L * (2 * latency_s + args.overhead_us * 1e-6 + wire_bytes * 8 / bits_per_s)
    return t_dense + slowest + t_net, t_net, slowest


def break_even_bits_per_s(shape, machines, args, rows):
    """The network bandwidth below which a step's exchanges take longer than its experts."""
    n, k, L, h = shape["experts"], shape["top_k"], shape["moe_layers"], shape["hidden"]
    _, _, experts = step_seconds(shape, machines, args, (args.latency_us * 1e-6, float("inf")), rows)
    fixed = L * (2 * args.latency_us * 1e-6 + args.overhead_us * 1e-6)
    owners = (machines - 1) * (1.0 - (1.0 - 1.0 / machines) ** k)
    wire_bits = L * rows * (owners * 4 * h + k * (machines - 1) / machines * 4 * h) * 8
    return wire_bits / (experts - fixed) if experts > fixed else float("inf")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ram-rate", type=float, required=True,
                    help="bytes/s the engine turns into decode from RAM (bench: bytes read/token x decode tokens/s, in RAM)")
    ap.add_argument("--rows-rate", action="append", default=[], metavar="FORMAT:B=FRACTION",
                    help="for a step of B rows of weights in FORMAT (fp8, bf16), the bytes the kernels stream per "
                         "second as a fraction of their rate at one row (bench-kernels --n-x 1,B): below 1 where B "
                         "rows make a step compute-bound; repeatable; without one a step streams at --ram-rate")
    ap.add_argument("--disk-rate", type=float, required=True,
                    help="bytes/s of expert reads from disk (bench: disk read bandwidth x disk bound ratio, streamed)")
    ap.add_argument("--overhead-us", type=float, required=True,
                    help="software cost of one layer exchange, microseconds (bench under mpirun, a model whose experts cost nothing)")
    ap.add_argument("--ram-gib", type=float, default=128.0, help="each machine's RAM (128)")
    ap.add_argument("--reserve-gib", type=float, default=8.0, help="RAM kept for the system, KV and buffers on each machine (8)")
    ap.add_argument("--latency-us", type=float, default=25.0,
                    help="one-way message latency of the network, microseconds (25: MPI over TCP on Ethernet)")
    ap.add_argument("--machines", default="1,2,3,4,6,8,12,16")
    ap.add_argument("--rows", default="1,16",
                    help="rows a decode step computes (1: one sequence; more: batched sequences or a verify block)")
    args = ap.parse_args()
    args.fractions = {}
    for x in args.rows_rate:
        key, fraction = x.split("=")
        fmt, b = key.split(":")
        args.fractions[(fmt, int(b))] = float(fraction)
    networks = [("10 Gb/s", 10e9), ("25 Gb/s", 25e9), ("100 Gb/s", 100e9)]
    machine_counts = [int(m) for m in args.machines.split(",")]
    print(f"RAM rate {args.ram_rate / 1e9:.2f} GB/s, disk rate {args.disk_rate / 1e9:.2f} GB/s, "
          f"exchange overhead {args.overhead_us:.0f} us, latency {args.latency_us:.0f} us one way; "
          f"{args.ram_gib:.0f} GiB a machine, {args.reserve_gib:.0f} GiB reserved")
    for shape, rows in ((s, r) for s in (deepseek_v3(), glm5()) for r in (int(x) for x in args.rows.split(","))):
        total = shape["experts"] * shape["moe_layers"] * shape["expert_bytes"]
        routed = shape["top_k"] * shape["moe_layers"] * shape["expert_bytes"]
        print(f"\n{shape['name']}, {rows} row{'s' if rows > 1 else ''} a step: experts {total / 1e9:.0f} GB, a token reads "
              f"{shape['dense_bytes'] / 1e9:.1f} GB dense + {routed / 1e9:.1f} GB routed")
        header = f"{'machines':>8}  " + "  ".join(f"{name + ' tok/s':>14} {'net':>5}" for name, _ in networks)
        print(header)
        for m in machine_counts:
            cells = []
            for _, bits in networks:
                t, t_net, _ = step_seconds(shape, m, args, (args.latency_us * 1e-6, bits), rows)
                cells.append(f"{rows / t:>14.3f} {100.0 * t_net / t:>4.1f}%")
            print(f"{m:>8}  " + "  ".join(cells))
        last = machine_counts[-1]
        print(f"{'':>8}  the exchanges outlast the experts at {last} machines below "
              f"{break_even_bits_per_s(shape, last, args, rows) / 1e9:.2f} Gb/s")
    print("\nnet: the share of a token's time spent in layer exchanges (latency, overhead, bytes on the wire)")


if __name__ == "__main__":
    main()
