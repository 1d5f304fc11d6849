"""PyTorch's half of the .pt round trip (tests/pt/roundtrip.sh): loads what ctorch wrote
with torch.load(weights_only=True), checks it, and saves it again with torch.save."""
import os
import sys

import torch

d = sys.argv[1]
sd = torch.load(os.path.join(d, "sd.pt"), weights_only=True)
w = torch.arange(6, dtype=torch.float32).reshape(2, 3) * 0.5
assert torch.equal(sd["w"], w), sd["w"]
assert torch.equal(sd["t"], w.t()) and sd["t"].stride() == (1, 3)
assert torch.equal(sd["row"], w[1]) and sd["row"].storage_offset() == 3
assert sd["t"].storage().data_ptr() == sd["w"].storage().data_ptr(), "one storage"
for name, dt in [("float64", torch.float64), ("float16", torch.float16), ("bfloat16", torch.bfloat16),
                 ("int64", torch.int64), ("int32", torch.int32), ("int16", torch.int16), ("int8", torch.int8),
                 ("uint8", torch.uint8), ("bool", torch.bool)]:
    assert sd[name].dtype == dt and torch.equal(sd[name], torch.arange(4).to(dt)), name
assert sd["scalar"].shape == () and sd["scalar"].item() == -1.5
ck = torch.load(os.path.join(d, "ckpt.pt"), weights_only=True)
assert ck["epoch"] == 3 and ck["name"] == "run" and ck["big"] == 1 << 40 and ck["neg"] == -7
assert ck["nested"] == {"a": [1, 2, {"b": None}], "t": (True, False)}, ck["nested"]
assert torch.equal(ck["model"]["w"], w)
# floats and bytes: PyTorch 1.13's weights_only unpickler has no BINFLOAT
fl = torch.load(os.path.join(d, "ckpt_float.pt"))
assert fl == {"lr": 0.25, "raw": b"\x00\xffab"}, fl
torch.save(sd, os.path.join(d, "torch_sd.pt"))
torch.save(ck, os.path.join(d, "torch_ckpt.pt"))
print("PyTorch read ctorch's files and saved them again")
