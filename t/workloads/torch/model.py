"""The small Qwen2-class model the GPU workloads share: random weights, nothing downloaded."""
import torch
from transformers import Qwen2Config, Qwen2ForCausalLM


def small_qwen2():
    config = Qwen2Config(vocab_size=1000, hidden_size=256, intermediate_size=512,
                         num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2,
                         max_position_embeddings=512)
    torch.manual_seed(0)
    return Qwen2ForCausalLM(config).to("cuda").eval()


def generate(model, prompt_tokens=16, new_tokens=16):
    ids = torch.randint(0, 1000, (1, prompt_tokens), device="cuda")
    with torch.no_grad():
        return model.generate(ids, max_new_tokens=new_tokens, min_new_tokens=new_tokens,
                              do_sample=False, pad_token_id=0)
