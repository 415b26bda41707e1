// A hybrid model given as a pattern of blocks (Megatron-LM's hybrid models:
// M a Mamba mixer, Mamba-2 with mamba_heads; * attention; - an MLP; E
// experts), as NVIDIA's Nemotron 3 Nano: 23 Mamba-2, 23 MoE and 6 attention
// blocks. The planner counts 31.58 B parameters, 3.58 B active: the model
// card's 31.6 B, and 3.6 B active with the embeddings.
// RUN: braid-plan --model-stats --model "family=hybrid,hidden=2688,layers=52,seq=4096,heads=32,kv_heads=2,head_dim=128,vocab=131072,ffn=1856,experts=128,top_k=6,shared_ffn=3712,activation=squared-relu,mamba_heads=64,mamba_head_dim=64,d_state=128,n_groups=8,d_conv=4,chunk=128,pattern=MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME,tied_embeddings=false" | FileCheck %s --check-prefix=STATS
// STATS: parameters: 31577937344
// STATS: parameters_active: 3580073408
// Planned on 8 H100s with experts over ep, Mamba-2's heads and groups over tp.
// RUN: braid-plan --format json --gpus 8 --global-batch 64 --hardware h100-sxm --evaluate "ep=8,mbs=1,zero=3,recompute=full;tp=2,ep=4,mbs=1,zero=3,recompute=full" --model "family=hybrid,hidden=2688,layers=52,seq=4096,heads=32,kv_heads=2,head_dim=128,vocab=131072,ffn=1856,experts=128,top_k=6,shared_ffn=3712,activation=squared-relu,mamba_heads=64,mamba_head_dim=64,d_state=128,n_groups=8,d_conv=4,chunk=128,pattern=MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME" | FileCheck %s --check-prefix=PLAN
// PLAN: "grid":"ep=8"
// PLAN: "step_s":
// PLAN: "grid":"ep=4,tp=2"
// PLAN: "step_s":
// The pattern's errors.
// RUN: not braid-plan --model-stats --model "family=hybrid,hidden=64,layers=3,seq=16,heads=4,vocab=256,ffn=128,pattern=M*" 2>&1 | FileCheck %s --check-prefix=LENGTH
// LENGTH: braid-plan: hybrid: the pattern has 2 blocks, not layers = 3
// RUN: not braid-plan --model-stats --model "family=hybrid,hidden=64,layers=2,seq=16,heads=4,vocab=256,ffn=128,pattern=MX" 2>&1 | FileCheck %s --check-prefix=BLOCK
// BLOCK: braid-plan: hybrid: unknown block 'X' in the pattern (M Mamba, * attention, - MLP, E experts)
// RUN: not braid-plan --model-stats --model "family=hybrid,hidden=64,layers=2,seq=16,heads=4,vocab=256,ffn=128,pattern=ME" 2>&1 | FileCheck %s --check-prefix=EXPERTS
// EXPERTS: braid-plan: hybrid: the pattern's E blocks need experts and top_k
// RUN: not braid-plan --model-stats --model "family=llama,hidden=64,layers=2,seq=16,heads=4,vocab=256,ffn=128,pattern=**" 2>&1 | FileCheck %s --check-prefix=FAMILY
// FAMILY: braid-plan: llama: a pattern of blocks is a hybrid model's
// RUN: not braid-plan --model-stats --model "family=hybrid,hidden=64,layers=2,seq=16,heads=4,vocab=256,ffn=128,mamba_heads=4,n_groups=3,pattern=M-" 2>&1 | FileCheck %s --check-prefix=GROUPS
// GROUPS: braid-plan: hybrid: Mamba-2 needs mamba_heads, mamba_head_dim, chunk >= 1 and n_groups dividing mamba_heads
// tp must divide Mamba-2's groups (8 here), as Megatron splits them.
// RUN: not braid-plan --gpus 16 --global-batch 16 --hardware h100-sxm --evaluate "tp=16,mbs=1" --model "family=hybrid,hidden=2048,layers=2,seq=4096,heads=32,kv_heads=32,vocab=1024,ffn=4096,mamba_heads=32,mamba_head_dim=64,n_groups=8,pattern=M*" 2>&1 | FileCheck %s --check-prefix=TP
// TP: braid-plan: the plan tp=16,mbs=1 cannot run:
