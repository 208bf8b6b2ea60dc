// The engine: a bundle's executables on one device, sharing one weight store
// and one set of state buffers: forward, generation (KV cache, sampling on
// the device), training steps (forward + backward, a custom loss's
// backward, log-probs, the optimizer step) and the hybrid engine's
// eval()/train() switches. The loops over it (DeepSpeed-style training,
// the PPO-shaped step) are runtime/api's.
#pragma once

#include "hybrid/BundleDesc.h"
#include "hybrid/Device.h"
#include "hybrid/Executable.h"
#include "hybrid/Generation.h"
#include "hybrid/HostTensor.h"
#include "hybrid/StateStore.h"
#include "hybrid/TrainConfig.h"
#include "hybrid/WeightStore.h"

#include <chrono>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace hybrid {

/// Ownership: an Engine shares the bundle and the device (several engines
/// may share both: actor, critic, reference..., and so the device's
/// allocator) and owns its weight store, its state store and its loaded
/// executables. Movable, not copyable; addresses of weights(), states() and
/// executable() stay valid across moves.
///
/// Thread safety: an Engine is used by one thread at a time. Different
/// engines may run concurrently on one device (the CPU device's allocator
/// and kernels are thread-safe; kernel threads are process-wide).
class Engine {
public:
  /// Validates the bundle and loads all of its executables on `device`
  /// (preparing every command: an op the device cannot run fails here, not
  /// mid-run). The weights start unbound and the states unallocated.
  /// Throws hybrid::Error, also for a bundle compiled for more than one
  /// data-parallel rank (this runtime runs one process).
  static Engine create(std::shared_ptr<const BundleDesc> bundle,
                       std::shared_ptr<Device> device);
  static Engine create(BundleDesc bundle, std::shared_ptr<Device> device);

  Engine(Engine &&) noexcept;
  Engine &operator=(Engine &&) noexcept;
  ~Engine();

  /// Binds the weights from `path`: an .onnx model (its initializers), or a
  /// safetensors checkpoint (file, folder with model.safetensors, or a
  /// sharded checkpoint's index). `allowedExtra` lists checkpoint tensors
  /// that may be present without being parameters (safetensors only), in
  /// addition to the bundle's tied names. What initOptimizer() starts
  /// (f32 masters, loss scale) starts again from the new weights.
  void loadWeights(const std::string &path,
                   const std::set<std::string> &allowedExtra = {});
  /// The same from a safetensors checkpoint named as `binding` says (a
  /// prefix selecting one model of several, parameters that may start at
  /// zero), with the bundle's checkpoint prefixes and extras added to it
  /// (a value model binds a causal LM's or a reward model's checkpoint).
  /// An .onnx path takes no prefix and no zeroIfMissing.
  void loadWeights(const std::string &path, const CheckpointBinding &binding);
  /// Deterministic demo weights (see WeightStore::initRandom); as
  /// loadWeights for initOptimizer(). LoRA adapters get them too (B is
  /// not zero then).
  void initRandom(uint64_t seed);

  /// LoRA (a bundle compiled with hybridc --lora-dim: bundle().lora). The
  /// adapters are parameters named as PEFT saves them
  /// (base_model.model.<module>.lora_A.weight, lora_B.weight); a base
  /// model's checkpoint lacks them, so loadWeights binds the rest and
  /// starts every adapter the checkpoint lacks as initAdapters(0) does (a
  /// checkpoint saved from this bundle holds them, and they bind).
  /// loadAdapters then binds them from a PEFT folder: adapter_config.json
  /// (peft_type LORA, r and lora_alpha equal to the bundle's, no rsLoRA)
  /// and adapter_model.safetensors, which must hold every adapter of the
  /// bundle and nothing else. Throws hybrid::Error naming the file and the
  /// mismatch; a bundle without LoRA is one too.
  void loadAdapters(const std::string &dir);
  /// PEFT's initialisation, from `seed`: A uniform in [-1/sqrt(in),
  /// 1/sqrt(in)] (kaiming_uniform_ with a = sqrt(5), as PEFT's default),
  /// B zeros, so the model starts as the base model. The weights must be
  /// bound.
  void initAdapters(uint64_t seed);
  /// Writes the adapters as PEFT does (save_pretrained): `dir`/
  /// adapter_config.json and adapter_model.safetensors (created when
  /// absent; each file atomically). The base weights are not written.
  void saveAdapters(const std::string &dir) const;

  /// Runs the "forward" executable: inputs by name (e.g. input_ids i64
  /// [batch, seq]) to outputs by name (e.g. logits f32 [batch, seq, vocab]),
  /// in host memory; waits for the result.
  NamedTensors forward(const NamedTensors &inputs);

  /// Generates up to config.maxNewTokens tokens after each prompt row with
  /// the bundle's @prefill and @decode (with fused LoRA, bundle().lora.
  /// fusedGeneration: between @lora_fuse, which adds the adapters into
  /// their weights in place, and @lora_unfuse, which takes them out, as
  /// DeepSpeed's hybrid engine does; GenerateResult::loraMergeMs): input_ids
  /// i64 [batch, prompt], optionally left-padded with attentionMask (1 = token,
  /// 0 = padding; a row's result does not depend on what else is in the batch).
  /// Checks every option and the KV-cache capacity before any work; throws
  /// hybrid::Error naming what is wrong. The generation state stays
  /// allocated between calls of the same bucket unless
  /// config.releaseInferenceCache.
  GenerateResult generate(const HostTensor &inputIds,
                          const HostTensor *attentionMask,
                          const GenerateConfig &config);

  /// Starts the training state that does not start at zero, in bundles
  /// that train bf16 or f16 weights (@init_optimizer): the f32 master
  /// copies of the weights as they are now, and for f16 the loss scale
  /// (config.initialScale, config.hysteresis left, no good step yet).
  /// forwardBackward and step run it with the defaults when it has not
  /// run since the weights were bound (or its states were restored); call
  /// it before them to start from other values. Nothing to do for f32
  /// weights. Throws hybrid::Error for a scale that is not a positive f32
  /// or a hysteresis below 1.
  void initOptimizer(const LossScaleConfig &config = {});

  /// One micro-batch of causal-LM training (a bundle compiled with hybridc
  /// --train): runs @forward_backward on input_ids i64 [batch, seq] (and
  /// attentionMask, when given and the model takes one), adds the
  /// gradients to the engine's accumulators and returns the loss: the mean
  /// cross-entropy of position t against labels[t + 1] over the labels
  /// that are not -100 (0 when none is). `labels` i64 [batch, seq] as HF's
  /// (aligned with input_ids; -100 on a prompt trains on the answer
  /// only); without them, input_ids with -100 where attentionMask is 0.
  /// Throws hybrid::Error when the bundle has no training executables.
  float forwardBackward(const HostTensor &inputIds,
                        const HostTensor *attentionMask = nullptr,
                        const HostTensor *labels = nullptr);
  /// One micro-batch of another loss the bundle was compiled with (hybridc
  /// --train --ppo: "ppo_actor_forward_backward", inputs input_ids,
  /// attention_mask, old_logprobs, advantages and action_mask): runs the
  /// named accumulation executable on `inputs` (by name; defaults filled),
  /// adds its gradients to the accumulators forwardBackward fills, counts
  /// one micro-batch for step() and returns the loss; `outputs`, when
  /// given, receives every output (the loss and what rides along: a
  /// reward model's end_scores and accuracy). Throws hybrid::Error when
  /// the bundle has no such executable, naming the ones it has.
  float accumulate(const std::string &executable, const NamedTensors &inputs,
                   NamedTensors *outputs = nullptr);
  /// The backward pass of a loss computed outside the model (PPO and other
  /// custom objectives), from its gradient with respect to the model's
  /// output: runs @backward (a bundle compiled with hybridc --train) on
  /// input_ids i64 [batch, seq] (and attentionMask, as in forwardBackward)
  /// and `cotangent`, f32 of forward()'s output's shape: grad_logits
  /// [batch, seq, vocab] for a language model, grad_values [batch, seq] for
  /// a value model (backwardCotangent() says which), and adds d sum(output
  /// * cotangent) / d param to the same accumulators forwardBackward fills;
  /// it counts as one micro-batch for step(), which averages over them. No
  /// activations are kept between calls: @backward recomputes the forward
  /// pass on the weights as they are now, so call it before step() changes
  /// them. Throws hybrid::Error, one line naming the cotangent and both
  /// shapes, when `cotangent` is not f32 of the output's shape.
  void backward(const HostTensor &inputIds, const HostTensor &cotangent,
                const HostTensor *attentionMask = nullptr);
  /// The input of @backward that backward() fills: "grad_logits" or
  /// "grad_values"; empty without @backward.
  std::string backwardCotangent() const;
  /// Each position's log-probability of the next token, f32 [batch, seq -
  /// 1]: position t's log-softmax at input_ids[:, t + 1] (@logprobs of a
  /// bundle compiled with hybridc --train; what PPO computes for the actor
  /// and the reference model). attentionMask as in forwardBackward.
  HostTensor logprobs(const HostTensor &inputIds,
                      const HostTensor *attentionMask = nullptr);
  /// The optimizer step over the micro-batches since the last step
  /// (forwardBackward and backward calls): their mean gradient, clipped to
  /// config.maxGradNorm, then the bundle's update (AdamW or SGD;
  /// config.optimizer must name it) on the weights in place (the one weight
  /// store every executable reads; bf16 and f16 weights through their f32
  /// masters); the accumulators are zeroed. With f16 weights, gradients that
  /// overflowed skip the step and the loss scale follows config.lossScale
  /// (StepResult says what happened). Throws hybrid::Error when no micro-batch
  /// ran, for a config the bundle was not compiled for or out of range, and, as
  /// DeepSpeed stops the run, when the gradients overflow at the minimum
  /// dynamic loss scale.
  StepResult step(const StepConfig &config);

  /// DeepSpeed-Chat's --enable_ema: an exponential moving average of every
  /// parameter, kept on the device as state "ema.<parameter>" (f32 of the
  /// parameter's shape, whatever the weights' dtype: in bf16 an update of
  /// (1 - beta) (param - ema) below half an ulp of ema would be lost, and
  /// at beta 0.992 that is most of them), started from the weights as
  /// they are now (again, when it ran before). updateEma() moves it; the
  /// weights bound later leave it alone. Throws hybrid::Error for beta
  /// outside [0, 1] or weights not bound.
  void enableEma(float beta = 0.992f);
  bool emaEnabled() const { return emaBeta_ >= 0; }
  /// The enabled average's beta; -1 when it is not enabled.
  float emaBeta() const { return emaBeta_; }
  /// moving_average(actor, actor_ema, beta) after an optimizer step: ema =
  /// torch.lerp(param, ema, beta) (= beta ema + (1 - beta) param) for every
  /// parameter, one device kernel over all of them (Device::emaUpdate),
  /// enqueued on the device's default stream. Throws hybrid::Error when
  /// enableEma has not run.
  void updateEma();
  /// The average's state names by parameter, in the bundle's parameter
  /// order ("ema." + name); empty when it is not enabled.
  std::vector<std::string> emaStateNames() const;

  /// The hybrid engine's mode switches (DeepSpeed's engine.eval() and
  /// engine.train()). Training and inference executables read the one
  /// weight store, so a switch moves and allocates nothing; the switches
  /// mark phases for the latency report instead. Every eval() after the
  /// first writes DeepSpeed's latency line for the phase since the previous
  /// eval() — end-to-end time, gather latency (0: one weight store),
  /// generate and training time with their shares, the rest, samples per
  /// second (current and average) — plus generated tokens per second, to
  /// the log (stderr unless setLog says otherwise).
  void eval();
  void train();
  bool training() const { return training_; }
  void setLog(std::function<void(const std::string &)> log);

  /// The executable named `name`; throws hybrid::Error listing the
  /// available ones when absent.
  Executable &executable(const std::string &name);
  bool hasExecutable(const std::string &name) const;
  std::vector<std::string> executableNames() const;

  /// State `name` (memory and concrete shape). Throws hybrid::Error when
  /// the bundle has no such state or it is not allocated.
  DeviceTensor state(const std::string &name);
  /// Allocates state `name` with `shape` (zero-filled) before any
  /// executable uses it (see StateStore::allocate).
  void allocateState(const std::string &name, const Shape &shape);
  /// Returns state `name`'s memory to the device allocator (contents lost);
  /// the next executable that uses it takes it again, zero-filled.
  void releaseState(const std::string &name);

  /// Waits until all work enqueued on the device has finished.
  void synchronize();

  const BundleDesc &bundle() const { return *bundle_; }
  Device &device() const { return *device_; }
  WeightStore &weights() { return *weights_; }
  const WeightStore &weights() const { return *weights_; }
  StateStore &states() { return *states_; }

private:
  Engine() = default;
  /// generate() on the weights as they are.
  GenerateResult generateOnWeights(const HostTensor &inputIds,
                                   const HostTensor *attentionMask,
                                   const GenerateConfig &config);
  /// initAdapters for the adapters whose module is in `modules` (all when
  /// empty).
  void initAdapters(uint64_t seed, const std::set<std::string> &modules);
  /// Whether initOptimizer's states are all allocated (or it has none).
  bool optimizerStarted() const;
  /// Releases what initOptimizer starts (new weights).
  void releaseOptimizerStart();
  std::shared_ptr<const BundleDesc> bundle_;
  std::shared_ptr<Device> device_;
  std::unique_ptr<WeightStore> weights_;
  std::unique_ptr<StateStore> states_;
  std::vector<int64_t> generationBucket_; // batch, cap, nmax of the states
  int64_t microBatches_ = 0; // (forward)backward calls since the last step
  std::vector<std::string> optimizerStart_; // states @init_optimizer writes
  TrainPlan trainPlan_;                     // of a bundle with @step
  float emaBeta_ = -1;                      // enableEma's; -1: no EMA
  // The latency report (eval()): what the phase since the last eval() did.
  bool training_ = true;
  bool evaluated_ = false;
  std::chrono::steady_clock::time_point lastEval_;
  double generateSeconds_ = 0, trainSeconds_ = 0;
  int64_t generatedSamples_ = 0, generatedTokens_ = 0;
  double allSamples_ = 0, allSeconds_ = 0;
  std::function<void(const std::string &)> log_;
  // Declared last: executables use the stores and go first.
  std::vector<std::unique_ptr<Executable>> executables_;
};

} // namespace hybrid
