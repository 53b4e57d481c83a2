"""A BF16 Hugging Face checkpoint from SmolLM2's Q4_1 GGUF, for SGLang to serve (run on the device machine).

SGLang 0.5.17 cannot serve the GGUF itself: given the ``.gguf`` path it fails to load the tokenizer
(``HFValidationError: Repo id must be a string, not PosixPath``), and with ``--tokenizer-path`` it starts but
every answer decodes to "" after spending the whole token budget.  transformers dequantises the GGUF's
weights to BF16 (its GGUF loader) and derives the tokenizer from the GGUF's metadata; both are saved as an
ordinary checkpoint directory.  Writes ``model_source.json`` beside it: the GGUF's sha256, the method, the
library versions and the time taken, so the run says what it served.

    python3 dequant.py GGUF OUT_DIR CHAT_TEMPLATE
"""

import hashlib
import json
import os
import sys
import time

import torch
import transformers
from transformers import AutoModelForCausalLM, AutoTokenizer

gguf_path, out_dir, template = sys.argv[1:4]
started = time.time()
folder, name = os.path.dirname(gguf_path), os.path.basename(gguf_path)
tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.bfloat16)
if not getattr(tokenizer, "chat_template", None):
    with open(template, encoding="utf-8") as fh:
        tokenizer.chat_template = fh.read()
model.save_pretrained(out_dir)
tokenizer.save_pretrained(out_dir)
digest = hashlib.sha256()
with open(gguf_path, "rb") as fh:
    for block in iter(lambda: fh.read(1 << 20), b""):
        digest.update(block)
record = {
    "served": out_dir,
    "method": "dequantised from the GGUF by transformers (AutoModelForCausalLM.from_pretrained(gguf_file=…), "
    "dtype bfloat16) and saved with its GGUF-derived tokenizer",
    "why": "SGLang 0.5.17 does not serve this GGUF: a .gguf model path fails at tokenizer load; with "
    "--tokenizer-path it answers every request with empty text",
    "gguf": name,
    "gguf_sha256": digest.hexdigest(),
    "transformers": transformers.__version__,
    "torch": torch.__version__,
    "seconds": round(time.time() - started, 1),
    "files": sorted(os.listdir(out_dir)),
}
with open(os.path.join(out_dir, "model_source.json"), "w", encoding="utf-8") as fh:
    json.dump(record, fh, indent=1)
print(json.dumps(record))
