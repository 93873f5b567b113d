"""Host cost per call of what a sample's turn does (suite 0.6), on this GPU."""
import time, statistics, torch, pynvml
pynvml.nvmlInit(); h = pynvml.nvmlDeviceGetHandleByIndex(0)
x = torch.empty(50 * 2**20 // 4, dtype=torch.int32, device="cuda")
a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
a.record(); b.record(); torch.cuda.synchronize()
def cost(name, fn, n=2000):
    ts = []
    for _ in range(n):
        t = time.perf_counter(); fn(); ts.append(time.perf_counter() - t)
    torch.cuda.synchronize()
    print(f"{name:28} median {statistics.median(ts)*1e6:7.1f} us  p90 {sorted(ts)[int(.9*n)]*1e6:7.1f} us")
cost("nvmlDeviceGetClockInfo", lambda: pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM))
cost("event.record", a.record)
cost("event.query", b.query)
cost("event.elapsed_time", lambda: a.elapsed_time(b))
cost("flush zero_ (L2 size)", x.zero_, 500)
cost("cuda._sleep(1000)", lambda: torch.cuda._sleep(1000))
