#!/usr/bin/env bash
# Whether SGLang 0.5.17 serves SmolLM2's GGUF directly (with --tokenizer-path), after stage.sh: starts it on
# port 30001, asks two greedy chat questions and one /generate with the token ids, writes $OUT/gguf_answers.json.
set -u
. tools/gpu/sglang/env.sh
G=$(python3 -c 'import evalpipe.engines.llamacpp as m; print(m.smollm2_path())'); mkdir -p "${OUT:=/tmp/out}"
PYTHONPATH=/tmp/sgl/site setsid python3 -m sglang.launch_server --model-path "$G" --tokenizer-path /tmp/sgl/smollm2-bf16 \
  --served-model-name smollm2 --dtype bfloat16 --attention-backend triton --sampling-backend pytorch --grammar-backend none \
  --mem-fraction-static 0.3 --disable-cuda-graph --host 127.0.0.1 --port 30001 \
  --chat-template tools/gpu/sglang/smollm2_chat_template.jinja > "$OUT/gguf_server.log" 2>&1 &
t=$SECONDS; until curl -sf http://127.0.0.1:30001/health >/dev/null; do sleep 2; [ $((SECONDS-t)) -gt 240 ] && break; done
echo "healthy after $((SECONDS-t)) s"
python3 - "$OUT/gguf_answers.json" <<'EOF'
import json, sys, urllib.request
B = "http://127.0.0.1:30001"
def post(p, body):
    r = urllib.request.Request(B + p, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    return json.loads(urllib.request.urlopen(r, timeout=120).read())
info = json.loads(urllib.request.urlopen(B + "/server_info").read())
keys = ("load_format", "quantization", "model_path", "tokenizer_path", "dtype", "kv_cache_dtype", "version")
out = {"server_info": {k: info.get(k) for k in keys}}
qs = ("What is the capital of France?", "What is 2 + 2? Answer with just the number.")
out["chat"] = [post("/v1/chat/completions", {"model": "smollm2", "messages": [{"role": "user", "content": q}],
                                           "temperature": 0, "max_tokens": 24}) for q in qs]
out["generate"] = post("/generate", {"text": "The capital of France is", "return_logprob": True,
                                     "sampling_params": {"temperature": 0, "max_new_tokens": 16}})
json.dump(out, open(sys.argv[1], "w"), indent=1)
print(out["server_info"])
for c in out["chat"]:
    print(repr(c["choices"][0]["message"]["content"]), c["choices"][0]["finish_reason"], c["usage"])
g = out["generate"]
print(repr(g.get("text")), [t[1:] for t in g["meta_info"].get("output_token_logprobs", [])][:16])
EOF
grep -iE "error|warn" "$OUT/gguf_server.log" | tail -5
