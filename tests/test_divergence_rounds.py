"""Issue 24's held-out rounds 4 to 19, kept in the corpus: their failing attempts are pointed within one
line of the annotated bug (benchmarks/heldout_24_round<N>.txt list them; lines.py --round measures the
same), and a structure failure says where too. Each round's lines still missed are its OPEN set below
(the listing's comments say why): not asserted, measured by lines.py --round."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from pointed import assert_pointed

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
try:
    from corpus_names import header, round_of
    from lines import bug_lines
finally:
    sys.path.remove(str(ROOT / "benchmarks"))

# round -> the file names of its annotated attempts whose line is still missed. Lines said since a
# later session's mechanisms left their sets: round 5's fairseq smoothing, round 7's staticmethods
# smoothing, round 8's key rope from zero and bilibili smoothing, round 9's legacy data gather, round
# 10's minbpe smoothing and round 11's rope from zero and Phi-2's hidden_act (lines13); round 8's
# temperature warper has a line since the lead's fix of the finder's stack read, off (58 for 63);
# round 5's Triton offsets (within on main before lines14), round 10's fairseq key_padding_mask taken
# as it came (renamed), round 12's Megatron smoothing (a number worked out from a variable set
# elsewhere), searchsorted cutoff (a search the reference never does), cdist distances (a table
# right under the mask) and Haiku's RoPE on v (handed) (lines14); round 13's litgpt shared_attention_norm
# and enum.Flag mask kinds (a setting whose branch, taken the other way, mends the case: flag_runs), round
# 9's Annotated Transformer one norm for both sublayers (a module read where its unread twin belongs:
# twin_read), round 8's Enum slices and round 13's IntEnum fused slots (an enum numbered the other way
# round: enum_order), round 9's logits processors appended top-p first (two stages in the other order:
# stage_order) (lines15); round 14's R-style mask filled cell by cell (a tensor filled by writes in a loop
# and returned: cell_writes) (round16).
OPEN = {
    # round 4: Baichuan, InternLM, Yi, GPT-J, Falcon, ChatGLM and the rest of the fourth round's
    # styles
    4: set(),
    # round 5: a helper given the wrong tensor (the call), masks in another order, an additive mask
    # built apart, keys returned as the values (the return), an eps default, a meshgrid of
    # positions, a log2(e) scale with exp2, folded heads, one object's steps for another's
    5: {"deepseek_sorted_dispatch_weights_dropped.py", "jit_script_no_rowsum.py",
        "olmo_slopes_no_pow2_rule.py"},
    # round 6: a scale folded into q with the wrong number, a name the reference binds as an alias,
    # a norm the reference calls on the line that uses its result, an `elif` of a helper that builds
    # the bias, a mask skipped on scores in another layout, a layout helper both objects share with
    # one cast left out, scores returned short by a helper
    6: {"vllm_fused_topk_weights_dropped.py"},
    # round 7: the helpers a file defines for itself: a silu given the up branch, a norm module
    # called on the wrong tensor, a norm fed a slice taken in the wrong order, a rotary module
    # called without its start (the helper's own line stays for a helper that is wrong); and
    # lines12's: cumsum position grids compared with an offset (the comparison), a band carved with
    # tril_indices at the wrong offset (the indices), a mask left None by the caller's condition
    # (it)
    7: {"functools_pipeline_ignore_hardcoded.py", "llmc_softmax_then_log.py",
        "mlx_axis_helpers_causal_end_plus_one.py", "speedrun_rotary_before_head_split.py"},
    # round 8: offs10's five mechanisms: a helper's flag argument given the wrong way (the call), a
    # flag default that skips a step (its definition), two right masks joined with `|` (the join), a
    # bool mask cast to numbers in a helper (the cast), a cache in the attempt's own layout, used
    # right, given back so (the return)
    8: {"abc_router_uniform_expert_mean.py", "abc_warpers_temperature_on_probs.py",
        "enum_head_order_bias_on_probs.py",
        "lambda_table_mask_blocked_padding_unread.py",
        "vllm_apply_top_k_top_p_exclusive_cumsum.py", "walrus_returns_incoming_cache.py",
        "xformers_attn_bias_global_max_bias_scaled.py"},
    # round 9: CLIP's additive causal mask added ahead of a padding fill (the later fill tells),
    # timm's running `attn` (scores under the probabilities' name: no role swap), a rotary call
    # written for q alone (said at that call, where k's belongs), q never scaled beside a key block
    # taken as the reference takes it
    9: set(),
    # round 10: nanoGPT's `bias` buffer registered over several lines (the line of the tensor it is
    # given), a norm helper shared by two objects that computes a value only one of them uses (a
    # chain of steps nothing uses in the end is not the story), DeepSeek-V3's `freqs =
    # torch.outer(t, freqs)` (a running variable under an earlier stage's name: no role swap)
    10: {"peft_layer_merge_forgets_scaling.py", "xformers_bmhk_wrapper_merge_from_bhmk.py"},
    # round 11: FlexAttention's mask_mod / score_mod closures, HF's sdpa_attention_forward written
    # out, GPT-2's Conv1D, BLOOM's baddbmm, Qwen-1, StableLM, Phi-2, Cohere, loralib, callable
    # objects, operator-overloaded helpers, functools pipelines, match / case, TensorDict-like dicts
    11: set(),
    # round 12: Granite's attention_multiplier property, a Java port's getScale(), Megatron-Core's
    # MLA config namespace, vLLM's prefill / decode split, Triton block pointers, CodeGen, GShard,
    # OPT, tensordot, doctest, pinyin, notebook cells, the array API, generators, singledispatch,
    # torchmetrics
    12: {"cpp_port_item_loops_top_p_before_top_k.py",
        "gshard_dispatch_einsum_gates_not_renormalised.py",
        "rust_port_power_of_two_rule_ignored.py",
        "sparse_coo_router_matrix_per_sequence_all_experts.py",
        "unfold_key_windows_not_causal_pad_inverted.py"},
    # round 13: x-transformers, nanochat, fairseq2, litgpt, OLMoE, Arctic, Cohere2 / Gemma-3 layer
    # types, MPT / Baichuan ALiBi, Llama-3.1 rope_scaling, Go and C programmers' habits, enums,
    # NamedTuple caches, Protocols, frozen dataclasses, recursion, registries, torch.kron / cummax
    13: {"x_transformers_default_kv_input_swapped.py",
         "target_distribution_kl_style_rest_over_v_minus_one.py", "bisect_python_lists_crossing_dropped.py",
         "baichuan13b_gen_alibi_mask_negated_pad_kept.py"},
    # round 14: Keras, Lambda layers, InternLM2, GPTBigCode, YAML-dict / Hydra-like configs, descriptors,
    # ONNX-export code, Mistral-Nemo, MiniCPM3 / DeepSeek-V3 official MLA, MLX-LM, xformers bias objects,
    # ml-ane, Paddle / MindSpore, Julia / R 1-based, Grok-1, Qwen3-MoE, BLOOM ALiBi, match / case
    # (mla/deepseek_v3 has its line graded alone, not always under the suite's load: kept here)
    14: {"lambda_layers_sequential_scale_default_arg.py",
         "xformers_attention_bias_window_left.py", "keras_sparse_loss_object_reduction_sum.py",
         "onnx_static_sort_gather_crossing_dropped.py", "yaml_config_hidden_act_gelu_tanh.py",
         "bloom_build_alibi_tensor_cumsum_positions_closest_is_h.py",
         "zamba_shared_block_causal_default_rows_masked.py",
         "context_manager_sampler_state_temperature_times_no_renorm.py",
         "flax_pure_functions_param_free_reversed_after_softmax.py",
         "mlx_lm_block_input_norm_twice_mask_from_cache.py", "match_case_mask_kinds_float_pad_pattern.py",
         "onnx_static_where_band_abs_pad_inverted.py", "deepseek_v3_inference_modelargs_eps_triu_zero.py"},
    # round 15: ClassVar defaults, TransformerLens hooks, Phi-4, GLM-4, Falcon / Falcon-H1, Llama-4,
    # Qwen2.5-VL, OLMo-2, Granite, Gemma-3n, Phi-3.5-MoE, Rust Result tuples, Fortran column-major
    # layouts, CUDA grid loops, tinygrad chains, SGLang forward modes, vLLM samplers, Kotlin scope
    # functions, comments in six languages (the listing's comments say why each is still off)
    15: {"tinygrad_method_chains_left_unnormalised.py",
         "deque_stacked_chunks_prepended_repeated.py",
         "fortran_column_major_keys_down_rows.py"},
    # round 16: Haskell / Pascal / Ada / OCaml / Lisp / C / VBA / Lua habits, fairscale, MiniCPM,
    # StarCoder2, Jamba, EXAONE, DBRX's attention, Griffin, Nemotron, LMDeploy, a libtorch port, a
    # TensorFlow band_part, comments in eighteen languages (the listing's comments say why)
    16: {"itertools_accumulate_rows_crossing_dropped.py"},
    # round 17: Hunyuan, Zamba2, ERNIE-4.5, OpenELM, SGLang radix names, MiniMax / Hunyuan-Large MoE,
    # Kimi / Moonlight MLA, SmolLM3, a Cohere port; Swift / Dart / Smalltalk / Forth / shell / Erlang /
    # Prolog / F# / Clojure / Perl / Nim / APL / PHP / assembly / COBOL / Scala habits; comments in
    # fifteen languages (the listing's comments say why each is still off)
    17: {"swift_guard_helpers_padding_on_queries.py", "radix_prefix_names_mask_not_offset.py",
         "hunyuan_config_softmax_scale_dim_default_width.py", "minimax_block_sparse_top1_weight_one.py",
         "apl_one_liners_rms_subtracts_mean.py", "kazakh_comments_relative_bias_unmasked_unscaled.py",
         "dart_cascade_builder_scale_inverted_padding_ignored.py",
         "icelandic_comments_b_random_merge_transposed.py",
         "moonlight_hf_names_q_norm_skipped_pad_on_queries.py",
         "smalltalk_message_cascade_diagonal_pad_ignored.py"},
    # round 18: Megatron's layer scaling, Swin, diffusers' AttnProcessor, Mllama, Aquila, Skywork-MoE;
    # TypeScript / Objective-C / Groovy / Eiffel / Solidity / Verilog / Mojo / GLSL / ABAP / Tcl / Vala /
    # Gleam / Modula-2 / awk habits, ContextVars, spreadsheet cells, Terraform variables, a bytecode
    # interpreter, the template-method and visitor patterns; comments in fifteen languages (the listing's
    # comments say why each is still off)
    18: {"uzbek_comments_slopes_one_geometric_series.py", "diffusers_attn_processor_scale_from_cross_dim.py",
         "protobuf_message_defaults_ignore_index_fresh.py", "aquila_norm_table_ffn_reads_attn_norm.py",
         "faroese_comments_running_max_starts_at_zero.py", "sql_join_positions_queries_from_zero.py",
         "maori_comments_scaling_from_rank_only.py",
         "spreadsheet_cells_scale_cell_nope_width.py", "mojo_fn_value_struct_rotations_from_zero.py",
         "skywork_combine_mode_config_mean.py", "bytecode_stack_program_negates_wrong_slot.py",
         "tcl_set_expr_procs_window_plus_one.py"},
    # round 19: asyncio heads, CLIPAttention, CSV / TOML / INI / JSON / literal_eval documents, threading.local,
    # graphlib, gin-like bindings, Elm, PowerShell, Django fields, C# properties, LINQ, Racket, Coq lemmas,
    # einsum sublists, queue.Queue, UserDict, shlex, Julia dots, pub/sub, ModuleType settings, Decimal, Cython
    # DEF_, pairwise, a reactive scan, Express middleware (the listing's comments say why each is still off)
    19: {"property_setter_alpha_from_rank.py", "tomllib_config_scale_dims_nope.py",
         "missing_dict_defaults_start_pos.py", "array_module_inv_freq_half_exponent.py",
         "middleware_stack_order.py", "json_config_ignore_minus_one.py",
         "decimal_slopes_from_zero_pad_ignored.py", "pairwise_block_edges_sum_kept_unscaled.py",
         "cmath_rotations_sin_cos_kv_norm_skipped.py", "julia_dot_names_abs_band_query_rows.py",
         "racket_define_let_eps_outside_unbiased.py"},
}
ANNOTATED = [(n, p) for n, missed in OPEN.items()
             for group in round_of(ROOT / "benchmarks" / f"heldout_24_round{n}.txt").values()
             for p in group if bug_lines(p) and p.name not in missed]


@pytest.mark.parametrize("n, path", ANNOTATED, ids=[f"r{n}-{p.parent.name}/{p.name}" for n, p in ANNOTATED])
def test_the_held_out_attempt_is_pointed_within_one_line_of_its_bug(n, path, graded):
    assert_pointed(path, graded(path))


# Rounds 11's and 12's mechanisms, each with the round's attempt and one of its class in another
# exercise / style: the line and the reason the report gives
SAID = [
    ("gqa/hf_sdpa_attention_forward_by_hand_mask_rows.py", "layout"),  # a mask picked with its broadcast
    ("mha/eager_helper_bias_from_row_mask.py", "layout"),  # axes elsewhere, used by a helper's bias
    ("mha_fused/bloom_style_baddbmm_causal_elif_padding.py", "guarded"),  # an elif that reads the mask,
    ("gqa/if_causal_elif_padding_additive.py", "guarded"),  # left out with its else under is_causal
    ("causal/callable_objects_float_mask_zero_fill.py", "scalar"),  # a class attribute's number
    ("alibi/namespace_class_fill_constant_zero.py", "scalar"),
    ("cross_entropy/frozen_config_default_ignore_index.py", "scalar"),  # a config built without the argument
    ("flash/tiny_c_style_helpers_unscaled_next_key.py", "given"),  # a helper inside the loop: no loop bound,
    ("flash/kernel_port_score_helper_scale_forgotten.py", "given"),  # the call that leaves out the scale
    ("mla/partial_pipeline_kv_norm_skipped_sin_cos.py", "input"),  # a stage left out of a pipeline: where
    ("mla/pipeline_class_call_q_norm_left_out.py", "input"),  # its stages were chosen
    ("gqa/granite_attention_multiplier_one_over_head_dim.py", "scalar"),  # a hand-on of a property's number
    ("cross_attention/java_port_camel_case_scale_context_dim.py", "scaled_defined"),  # a getter's return
    ("kv_cache/cached_property_scale_handed_to_local.py", "scalar"),  # a cached_property unpacked into locals
    ("mla/megatron_core_mla_layernorm_epsilon.py", "scalar"),  # a keyword of a namespace made by a call
    ("mla_decode/argparse_namespace_args_rms_norm_eps.py", "scalar"),
    ("mla_decode/vllm_prefill_decode_split_chunk_unmasked.py", "none_given"),  # a literal None handed to a
    ("sliding_window/helper_attend_given_none_without_padding.py", "none_given"),  # helper that guards it
    # round 13's
    ("moe/olmoe_sparse_block_norm_topk_prob_off.py", "flag_skips"),  # a flag in a namespace kept on self
    ("mha/argparse_hparams_on_self_scale_flag_off.py", "flag_skips"),  # (self.cfg = SimpleNamespace(…))
    ("mla/attrs_like_model_args_post_init_scale_sum_sqrt.py", "scaled_defined"),  # object.__setattr__ in
    ("cross_attention/frozen_config_post_init_scale_context_width.py", "scaled_defined"),  # __post_init__
    ("gqa/einsum_queries_before_heads_config_property_scale_by_dim.py", "scaled_defined"),  # scores (B, T, H, S)
    ("sdpa/op_registry_decorator_float_mask_multiplied.py", "values"),  # a one-operator helper of the file:
    ("flash/cummax_block_maxima_two_pass_diagonal_strict.py", "made"),  # its own line, not its call's
    ("mla/per_head_comprehension_stage_tuple_norm_dropped_rows_masked.py", "stages_listed"),  # a loop over
    ("mla_decode/module_list_query_path_norm_left_out.py", "stages_listed"),  # self.<layers> listed once
    ("swiglu/nemo_activation_registry_silu_is_sigmoid.py", "table_entry"),  # a torch function the reference
    ("swiglu/class_table_swish_entry_is_relu.py", "table_entry"),  # never runs, from a table's one entry
    # round 14's
    ("lora/init_subclass_registry_scaling_inverted.py", "scalar"),  # a number made by the one return of
    ("mqa/math_docstrings_scale_helper_reads_model_width.py", "scalar"),  # a helper handed names as they are
    ("mqa/yaml_dict_config_softmax_axis.py", "scalar"),  # a nested config table, an __init__ default never
    ("norms/hydra_like_nested_defaults_rms_reduce_dim.py", "values"),  # overridden, read by keyword
    ("sdpa/keras_softmax_layer_naive_exp_value_width.py", "scaled_defined"),  # a helper's factor, set by
    ("mha/functional_core_thin_module_scale_from_input_width.py", "scaled_defined"),  # its caller's local
    # round 15's: a tensor a function of the file makes with a factory, fills by writes at one line of a
    # loop and returns, wrong where the call's result is first used: said at the write
    ("causal/cuda_grid_block_thread_rows_diagonal.py", "cell_writes"),  # read on the call's own line
    ("alibi/fortran_one_based_do_loops_slopes_stored_reversed.py", "cell_writes"),
    ("causal/r_one_based_loops_extra_column.py", "cell_writes"),  # round 14's, read lines after the call
    # a library function the reference never runs, given to a name by one assignment of the file and
    # called through it where the values first go wrong: said at the assignment
    ("swiglu/gemma3n_classvar_act_fn_sigmoid.py", "function_held"),  # a ClassVar staticmethod
    ("swiglu/swedish_init_activation_attribute_relu.py", "function_held"),  # self.<name> set in __init__
    # a function of the file that hands a parameter defaulting to 0 on to where the values first go wrong,
    # called once without it: said at the call
    ("mla_decode/german_rotations_offset_default_zero.py", "default_left"),  # a method over the stub's helper
    ("mla_decode/hungarian_module_rope_table_past_default.py", "default_left"),  # a module-level function
    ("kv_cache/hungarian_visible_helper_offset_default.py", "default_left"),  # a mask helper of the file
    # round 16's: a function of the file whose one call passes for a parameter something else than the
    # value of that name its caller holds and never reads: said at the call
    ("alibi/haskell_where_clauses_geometric_for_any_heads.py", "passed_instead"),  # a local n = floor_pow2(h)
    ("norms/checkpointed_statistics_layernorm_eps_literal.py", "passed_instead"),  # self.eps; through checkpoint()
    ("rope/zig_device_first_helpers_default_theta_passed.py", "passed_instead"),  # a module constant, two helpers deep
    # round 17's: an attribute declared as another number and set again in a method: said where it got
    # the value used, not at the declaration
    ("lora/cobol_working_storage_scale_inverted.py", "scalar"),
    ("mha/hungarian_comments_scale_recomputed_in_reset.py", "scalar"),
    # a branch picked by a class attribute holding a string, or by a parameter defaulting to a module
    # constant no call passes (in a module function too), said at the setting (flag_runs)
    ("gqa/ernie45_class_attribute_repeat_heads_tiled.py", "flag_runs"),
    ("swiglu/slovenian_comments_class_attribute_activation_relu.py", "flag_runs"),  # said at the if itself
    ("sliding_window/strenum_mask_kinds_window_not_causal.py", "flag_runs"),
    ("rope/maltese_comments_module_layout_default_interleaved.py", "flag_runs"),
    # a helper's one call handing it a literal: a bool turned, a keyword left to its default, or the
    # caller's unread parameter passed for a defaulted one mends the case: said at the call
    ("alibi/prolog_facts_slope_clauses_reversed.py", "given_flag"),  # a Python helper's flag
    ("moe/galician_comments_route_flag_positional_false.py", "given_flag"),  # positional
    ("cross_attention/afrikaans_comments_scores_helper_scale_one.py", "default_overridden"),
    ("cross_attention/slovak_comments_default_source_kv_from_x.py", "unread_left"),  # raised in the helper
    ("alibi/luxembourgish_comments_helper_key_mask_left_out.py", "unread_left"),
    # a key of a table read by a variable key, written where another key belongs (key_chosen); two
    # entries of a list a loop runs through, in the other order (entry_order)
    ("swiglu/php_dollar_this_gelu_default_activation.py", "key_chosen"),
    ("decoder_layer/smollm3_nope_flag_rope_on_values.py", "key_chosen"),
    ("sampling/catalan_comments_nucleus_before_top_k.py", "entry_order"),
    ("swiglu/irish_comments_stage_list_silu_after_product.py", "entry_order"),
    # round 18's: an integer setting the finder's line reads (a class attribute, a ContextVar's default, a
    # helper's default no call passes, a module constant), one more or one less mends the case: said there
    ("mqa/groovy_closures_class_attribute_diagonal_zero.py", "setting_off_by_one"),
    ("gqa/contextvar_softmax_axis_default_queries.py", "setting_off_by_one"),
    ("norms/albanian_comments_variance_helper_ddof_one.py", "setting_off_by_one"),
    ("causal/telugu_comments_module_future_offset_two.py", "setting_off_by_one"),
    # two values of a table read by a variable key, each given to the other's key: said at the first
    ("swiglu/graphql_resolver_table_gate_up_swapped.py", "values_swapped"),
    ("mha_fused/vietnamese_comments_slot_table_k_v_crossed.py", "values_swapped"),
    # a number made by the one return of a hook the base class leaves abstract and one subclass fills in,
    # from sizes of the tensor it is handed: said at that return
    ("sdpa/template_method_hooks_scale_hook_ignores_argument.py", "scalar"),
    ("mqa/sinhala_comments_abstract_scale_hook_over_width.py", "scaled_defined"),
    # round 19's: a value the file chooses in a literal (a document's entry: an INI / CSV / bindings / .env line;
    # a table's value, a field's default, a decorator's keyword, a partial's keyword), written otherwise (a
    # word the code compares with, a bool turned, an int one off or swapped with another entry's) mends the
    # case: said there
    ("mha_fused/csv_slot_table_k_v_rows_swapped.py", "literal_setting"),
    ("decoder_layer/gin_like_bindings_norm_position_post.py", "literal_setting"),
    ("mqa/mappingproxy_frozen_options_diagonal_offset.py", "literal_setting"),
    ("moe/django_fields_weighted_false.py", "literal_setting"),
    ("mha/dotenv_lines_scale_by_model.py", "literal_setting"),
    ("sampling/partial_bound_sort_ascending.py", "literal_setting"),
    # an output made empty and filled by slice writes, compared as the call returned it: the repairs' runs
    # see it right once the setting is mended (here an integer setting one off)
    ("flash/cython_def_constants_diag_shift.py", "setting_off_by_one"),
    ("causal/empty_like_rows_filled_diagonal_constant.py", "setting_off_by_one"),
]


@pytest.mark.parametrize("name, reason", SAID, ids=[n for n, _ in SAID])
def test_the_round_mechanism_says_its_line(name, reason, graded):
    path = ROOT / "tests" / "corpus" / name
    assert_pointed(path, graded(path), reason)


# Rounds 12's to 19's naming and verdict classes, each with a second attempt of another style
NAMED = [
    "mqa/singledispatch_mask_types_next_visible_dropout_on.py",  # dropout on in eval and a second mistake:
    "gqa/lightning_hparams_dict_dropout_on_scale_d_model.py",  # judged on the configs whose outputs are not random
    "cross_entropy/torchmetrics_update_compute_ignore_negative.py",  # ignored = negative, caught by
    "cross_entropy/optax_integer_labels_where_nonnegative.py",  # the case with ignore_index=0
    "mqa/c_programmer_flat_offsets_probs_masked_no_out_proj.py",  # round 13: the causal mask on the scores,
    "gqa/where_chain_causal_first_padding_zeroed_on_probs.py",  # the padding zeroed on the probabilities
    "mla/deepseek_v3_inference_modelargs_eps_triu_zero.py",  # round 14: a pair whose mask is guarded by
    "gqa/meta_llama2_model_py_mask_guarded_diag_scale_dim.py",  # `seqlen > 1` (T = 1 right, no NaN row)
    "gqa/qwen2_5_vl_text_heads_first_leak_next.py",  # round 15: the query heads alone split without the
    "mha/polish_kv_helper_query_inline_bhtd.py",  # transpose (keys and values split right)
    "flash/iterator_class_tiles_diag_blocked_normalised_per_tile.py",  # round 15: each tile's probabilities
    "flash/dutch_split_tiles_every_block_normalised_per_tile.py",  # divided by their own sum, every key tile visited
    "alibi/czech_pipe_helper_bias_after_softmax_unscaled.py",  # round 16: the ALiBi bias added to the
    "alibi/ruby_each_with_index_bias_added_to_probs_everywhere.py",  # probabilities, the blocked keys too
    "cross_attention/mllama_text_cross_attention_pad_rows_no_o_proj.py",  # round 18: raised at some sizes, and
    "cross_attention/crystal_getter_macros_context_rows_sliced.py",  # the mistake's variant cannot run at others
    "mla_decode/mongolian_comments_absorb_split_value_first_scale_rank_attribute.py",  # round 18: wkv_b's rows
    "mla_decode/punjabi_comments_uv_rows_first_scale_latent_plus_rope.py",  # split (v, nope), with the scale
    "cross_entropy/json_config_ignore_minus_one.py",  # round 19: ignore_index hard-coded as nanoGPT's -1,
    "cross_entropy/nanogpt_habit_minus_one_literal.py",  # a -100 target gathered: raises (error), named
]


@pytest.mark.parametrize("name", NAMED)
def test_the_round_attempt_meets_its_header(name, graded):
    path = ROOT / "tests" / "corpus" / name
    result = graded(path)
    expect, names = header(path)
    assert result.verdict.value == expect
    assert sorted(d.id for d in result.diagnoses) == names
