{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- The hypothesis `Laws 𝕊` of the theorems is satisfiable: the main
-- theorems of Spec.Theorems, applied to two concrete scalar structures
-- with their laws, the integers (Spec.Scalar.Int) and the rationals
-- (Spec.Scalar.Rational).  Each statement below is the theorem of
-- Spec.Theorems with 𝕊 fixed, and its proof is that theorem applied to
-- the instance's laws: no hypothesis is left open except those the
-- theorems themselves state (Consistent, ValCons, PF, ...).  The
-- theorems so instantiated: optimise-sound, ∇-correct, ∇₀-correct,
-- chain-adjoint, chain-∇-correct, dump-correct with its instance for
-- the paper's CNN (cnn-dump), and cnn-forward (which needs no law).
--
-- A concrete check closes the file: over ℤ, the gradients of the
-- paper's chain example (Spec.Model.ChainExample: x = a · b, y = x · x,
-- seed one on y) at a = 2, b = 3 are computed by the evaluator and
-- compared by refl with the hand-computed d_a = 2ab² = 36 and
-- d_b = 2ba² = 24, both for the shared chain gradients and for ∇₀ of
-- the inlined objective (a · b) · (a · b).
------------------------------------------------------------------------
module Spec.Theorems.Instances where

open import Data.Fin using (zero; suc)
open import Data.Integer using (+_)
open import Data.Product using (_,_)
open import Data.Unit using (tt)
open import Relation.Binary.PropositionalEquality using (_≡_; refl)

open import Spec.Array.Base using (S; P; ι)
open import Spec.Lang.Syntax
open import Spec.Lang.Subst
open import Spec.Lang.Opt using (optimise)
open import Spec.Lang.AD using (lookupE; ∇₀)
open import Spec.Lang.Chain using (Chain; chain-grads-opt; opt-gradient)
open import Spec.Lang.AD using (EnvE; ∇; env-map)
open import Spec.Proofs.Chain.Typed using (here; baseCtx; baseNames; base-env; seed-env; binding-grads; env-grads)
open import Spec.Scalar using (Scalar)
open import Data.List using (map; _++_)
open import Data.Product using (_×_)
open import Spec.Model.PF using (cnn-pf)
import Spec.Model.CNN as CNN
open import Spec.Scalar.Int using (ℤ-scalar; ℤ-laws)
open import Spec.Scalar.Rational using (ℚ-scalar; ℚ-laws)

private
  variable
    Γ Δ : Ctx
    is  : IS
    s   : S

------------------------------------------------------------------------
-- Over the integers

module Over-ℤ where

  open import Spec.Theorems ℤ-scalar
    using (optimise-sound; ∇₀-correct; chain-adjoint; chain-∇-correct; ∇-correct; dump-correct;
           cnn-dump; cnn-forward)
  open import Spec.Lang.Eval ℤ-scalar
  open import Spec.Proofs.Val ℤ-scalar using (Same)
  open import Spec.Proofs.Forward ℤ-scalar using (TEnv; D⟦_⟧; tlookup)
  open import Spec.Proofs.AD.Env ℤ-scalar ℤ-laws using (⟨_,_⟩) renaming (ip to ipE)
  open import Spec.Proofs.Chain ℤ-scalar ℤ-laws using (Consistent)
  open import Spec.Proofs.Chain.Inline ℤ-scalar using (ctan; PF; clean; emb; inl; ValCons; base-env₀)
  open import Spec.Proofs.Chain.Build ℤ-scalar ℤ-laws using (chain-env)
  open import Spec.Proofs.Chain.Dump ℤ-scalar ℤ-laws using (top; DumpCorrect)
  import Spec.CNN.Array ℤ-scalar as Arr
  open Scalar ℤ-scalar using (_+_)

  ℤ-optimise-sound : (e : E Γ is) (ρ : Env Γ) → Same is (⟦ optimise e ⟧ ρ) (⟦ e ⟧ ρ)
  ℤ-optimise-sound = optimise-sound ℤ-laws

  ℤ-∇₀-correct : (e sd : E Δ (ar s)) (ρ : Env Δ) (v : TEnv Δ)
               → ipE Δ (∇₀ e sd) ρ v ≡ ⟨ ⟦ sd ⟧ ρ , D⟦ e ⟧ ρ v ⟩
  ℤ-∇₀-correct = ∇₀-correct ℤ-laws

  ℤ-chain-adjoint : ∀ {Φ p} (c : Chain Φ) (y : ar p ∈ Φ) (seed : E Φ (ar p)) (γ : Env Φ) (v : TEnv (baseCtx c))
                  → Consistent c here γ (seed-env y seed)
                  → ipE (baseCtx c) (base-env c y seed) γ v ≡ ⟨ ⟦ seed ⟧ γ , tlookup (ctan c γ v) y ⟩
  ℤ-chain-adjoint = chain-adjoint ℤ-laws

  ℤ-chain-∇-correct : ∀ {Φ p} (c : Chain Φ) (pf : PF c) (y : ar p ∈ clean c) (seed : E Φ (ar p))
                      (s₀ : E (baseCtx c) (ar p)) (γ : Env Φ)
                    → ValCons c γ → Consistent c here γ (seed-env (emb c y) seed)
                    → (∀ i → ⟦ s₀ ⟧ (base-env₀ c γ) i ≡ ⟦ seed ⟧ γ i)
                    → (x : ar s ∈ baseCtx c) (i : P s)
                    → ⟦ lookupE {baseCtx c} (base-env c (emb c y) seed) x ⟧ γ i
                      ≡ ⟦ lookupE {baseCtx c} (∇₀ (inl c pf y) s₀) x ⟧ (base-env₀ c γ) i
  ℤ-chain-∇-correct = chain-∇-correct ℤ-laws

  -- ∇-correct, dump-correct (and the CNN's instance of it) and
  -- cnn-forward (which assumes no law) with ℤ fixed

  ℤ-∇-correct : (e sd : E Δ (ar s)) (δ : EnvE Δ Δ) (ρ : Env Δ) (v : TEnv Δ)
              → ipE Δ (∇ e sd δ) ρ v ≡ ipE Δ δ ρ v + ⟨ ⟦ sd ⟧ ρ , D⟦ e ⟧ ρ v ⟩
  ℤ-∇-correct = ∇-correct ℤ-laws

  ℤ-dump-correct : ∀ {Δ p} (c : Chain (Δ ▹ ar p ▹ ar p)) (pf : PF c) (seed : E (Δ ▹ ar p ▹ ar p) (ar p))
                       (s′ : E (clean c) (ar p)) → seed ≡ ren (emb c) s′
                   → (chain-grads-opt c seed
                      ≡ map opt-gradient (binding-grads c (λ x → x) (seed-env v₀ seed))
                        ++ env-grads (baseNames c) (env-map {Γ = baseCtx c} optimise (base-env c v₀ seed)))
                     × (∀ (γ₀ : Env (baseCtx c)) {s} (x : ar s ∈ baseCtx c) (i : P s)
                        → ⟦ lookupE {baseCtx c} (env-map {Γ = baseCtx c} optimise (base-env c v₀ seed)) x ⟧
                            (chain-env c v₀ seed γ₀) i
                          ≡ ⟦ lookupE {baseCtx c} (∇₀ (inl c pf (top c)) (subst (inl c pf) s′)) x ⟧ γ₀ i)
  ℤ-dump-correct = dump-correct ℤ-laws

  ℤ-cnn-dump : DumpCorrect CNN.chain cnn-pf CNN.seed one
  ℤ-cnn-dump = cnn-dump ℤ-laws

  ℤ-cnn-forward : ∀ inp k₁ b₁ k₂ b₂ fc b (γ : Env CNN.Φ) → ValCons CNN.chain γ
                  → let γ₀ = base-env₀ CNN.chain γ in
                    (∀ i → lookup v₆ γ₀ i ≡ inp i) → (∀ i → lookup v₅ γ₀ i ≡ k₁ i)
                  → (∀ i → lookup v₄ γ₀ i ≡ b₁ i) → (∀ i → lookup v₃ γ₀ i ≡ k₂ i)
                  → (∀ i → lookup v₂ γ₀ i ≡ b₂ i) → (∀ i → lookup v₁ γ₀ i ≡ fc i)
                  → (∀ i → lookup v₀ γ₀ i ≡ b i)
                  → ∀ i → lookup v₂ γ i ≡ Arr.forward inp k₁ b₁ k₂ b₂ fc b i
  ℤ-cnn-forward = cnn-forward

------------------------------------------------------------------------
-- Over the rationals

module Over-ℚ where

  open import Spec.Theorems ℚ-scalar
    using (optimise-sound; ∇₀-correct; chain-adjoint; chain-∇-correct; ∇-correct; dump-correct;
           cnn-dump; cnn-forward)
  open import Spec.Lang.Eval ℚ-scalar
  open import Spec.Proofs.Val ℚ-scalar using (Same)
  open import Spec.Proofs.Forward ℚ-scalar using (TEnv; D⟦_⟧; tlookup)
  open import Spec.Proofs.AD.Env ℚ-scalar ℚ-laws using (⟨_,_⟩) renaming (ip to ipE)
  open import Spec.Proofs.Chain ℚ-scalar ℚ-laws using (Consistent)
  open import Spec.Proofs.Chain.Inline ℚ-scalar using (ctan; PF; clean; emb; inl; ValCons; base-env₀)
  open import Spec.Proofs.Chain.Build ℚ-scalar ℚ-laws using (chain-env)
  open import Spec.Proofs.Chain.Dump ℚ-scalar ℚ-laws using (top; DumpCorrect)
  import Spec.CNN.Array ℚ-scalar as Arr
  open Scalar ℚ-scalar using (_+_)

  ℚ-optimise-sound : (e : E Γ is) (ρ : Env Γ) → Same is (⟦ optimise e ⟧ ρ) (⟦ e ⟧ ρ)
  ℚ-optimise-sound = optimise-sound ℚ-laws

  ℚ-∇₀-correct : (e sd : E Δ (ar s)) (ρ : Env Δ) (v : TEnv Δ)
               → ipE Δ (∇₀ e sd) ρ v ≡ ⟨ ⟦ sd ⟧ ρ , D⟦ e ⟧ ρ v ⟩
  ℚ-∇₀-correct = ∇₀-correct ℚ-laws

  ℚ-chain-adjoint : ∀ {Φ p} (c : Chain Φ) (y : ar p ∈ Φ) (seed : E Φ (ar p)) (γ : Env Φ) (v : TEnv (baseCtx c))
                  → Consistent c here γ (seed-env y seed)
                  → ipE (baseCtx c) (base-env c y seed) γ v ≡ ⟨ ⟦ seed ⟧ γ , tlookup (ctan c γ v) y ⟩
  ℚ-chain-adjoint = chain-adjoint ℚ-laws

  ℚ-chain-∇-correct : ∀ {Φ p} (c : Chain Φ) (pf : PF c) (y : ar p ∈ clean c) (seed : E Φ (ar p))
                      (s₀ : E (baseCtx c) (ar p)) (γ : Env Φ)
                    → ValCons c γ → Consistent c here γ (seed-env (emb c y) seed)
                    → (∀ i → ⟦ s₀ ⟧ (base-env₀ c γ) i ≡ ⟦ seed ⟧ γ i)
                    → (x : ar s ∈ baseCtx c) (i : P s)
                    → ⟦ lookupE {baseCtx c} (base-env c (emb c y) seed) x ⟧ γ i
                      ≡ ⟦ lookupE {baseCtx c} (∇₀ (inl c pf y) s₀) x ⟧ (base-env₀ c γ) i
  ℚ-chain-∇-correct = chain-∇-correct ℚ-laws

  -- ∇-correct, dump-correct (and the CNN's instance of it) and
  -- cnn-forward (which assumes no law) with ℚ fixed

  ℚ-∇-correct : (e sd : E Δ (ar s)) (δ : EnvE Δ Δ) (ρ : Env Δ) (v : TEnv Δ)
              → ipE Δ (∇ e sd δ) ρ v ≡ ipE Δ δ ρ v + ⟨ ⟦ sd ⟧ ρ , D⟦ e ⟧ ρ v ⟩
  ℚ-∇-correct = ∇-correct ℚ-laws

  ℚ-dump-correct : ∀ {Δ p} (c : Chain (Δ ▹ ar p ▹ ar p)) (pf : PF c) (seed : E (Δ ▹ ar p ▹ ar p) (ar p))
                       (s′ : E (clean c) (ar p)) → seed ≡ ren (emb c) s′
                   → (chain-grads-opt c seed
                      ≡ map opt-gradient (binding-grads c (λ x → x) (seed-env v₀ seed))
                        ++ env-grads (baseNames c) (env-map {Γ = baseCtx c} optimise (base-env c v₀ seed)))
                     × (∀ (γ₀ : Env (baseCtx c)) {s} (x : ar s ∈ baseCtx c) (i : P s)
                        → ⟦ lookupE {baseCtx c} (env-map {Γ = baseCtx c} optimise (base-env c v₀ seed)) x ⟧
                            (chain-env c v₀ seed γ₀) i
                          ≡ ⟦ lookupE {baseCtx c} (∇₀ (inl c pf (top c)) (subst (inl c pf) s′)) x ⟧ γ₀ i)
  ℚ-dump-correct = dump-correct ℚ-laws

  ℚ-cnn-dump : DumpCorrect CNN.chain cnn-pf CNN.seed one
  ℚ-cnn-dump = cnn-dump ℚ-laws

  ℚ-cnn-forward : ∀ inp k₁ b₁ k₂ b₂ fc b (γ : Env CNN.Φ) → ValCons CNN.chain γ
                  → let γ₀ = base-env₀ CNN.chain γ in
                    (∀ i → lookup v₆ γ₀ i ≡ inp i) → (∀ i → lookup v₅ γ₀ i ≡ k₁ i)
                  → (∀ i → lookup v₄ γ₀ i ≡ b₁ i) → (∀ i → lookup v₃ γ₀ i ≡ k₂ i)
                  → (∀ i → lookup v₂ γ₀ i ≡ b₂ i) → (∀ i → lookup v₁ γ₀ i ≡ fc i)
                  → (∀ i → lookup v₀ γ₀ i ≡ b i)
                  → ∀ i → lookup v₂ γ i ≡ Arr.forward inp k₁ b₁ k₂ b₂ fc b i
  ℚ-cnn-forward = cnn-forward

------------------------------------------------------------------------
-- A concrete check over ℤ: the chain example's gradients at a = 2,
-- b = 3, at one position (all positions hold the same values).

module Chain-example-at-2-3 where
  open import Spec.Array.Base using (Ar; K)
  open import Data.Integer using (ℤ)
  open import Spec.Lang.Eval ℤ-scalar
  import Spec.Model.ChainExample as CE
  import Spec.Proofs.Chain.Example ℤ-scalar ℤ-laws as Ex

  a b : Ar (ι 5) ℤ
  a = K (+ 2)
  b = K (+ 3)

  i : P (ι 5)
  i = ι (suc (suc zero))

  -- the base context is a b, so v₁ is a and v₀ is b
  shared-d-a : ⟦ lookupE {CE.Γ} (base-env CE.chain v₀ CE.seed) v₁ ⟧ (Ex.γ a b) i ≡ + 36
  shared-d-a = refl

  shared-d-b : ⟦ lookupE {CE.Γ} (base-env CE.chain v₀ CE.seed) v₀ ⟧ (Ex.γ a b) i ≡ + 24
  shared-d-b = refl

  inlined-d-a : ⟦ lookupE {CE.Γ} (∇₀ {Δ = CE.Γ} ((var v₁ ⊠ var v₀) ⊠ (var v₁ ⊠ var v₀)) one) v₁ ⟧ ((tt , a) , b) i ≡ + 36
  inlined-d-a = refl

  inlined-d-b : ⟦ lookupE {CE.Γ} (∇₀ {Δ = CE.Γ} ((var v₁ ⊠ var v₀) ⊠ (var v₁ ⊠ var v₀)) one) v₀ ⟧ ((tt , a) , b) i ≡ + 24
  inlined-d-b = refl
