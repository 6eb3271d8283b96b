{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- The chain theorem on the paper's chain example (Spec.Model.
-- ChainExample: x = a · b, y = x · x, seed one on y): its hypotheses
-- hold -- the chain is placeholder-free, and for any values of a and b
-- there is a consistent environment (the values of x, y and of the
-- placeholders d_x, d_y, all checked by refl) -- so chain-∇-correct
-- applies: the shared gradients d_a, d_b equal the gradients of the
-- inlined objective (a · b) · (a · b).
------------------------------------------------------------------------
open import Spec.Scalar using (Scalar)
open import Spec.Scalar.Laws using (Laws)

module Spec.Proofs.Chain.Example (𝕊 : Scalar) (laws : Laws 𝕊) where

open import Data.Product using (_,_)
open import Data.Unit using (tt)
open import Relation.Binary.PropositionalEquality using (_≡_; refl)

open import Spec.Array.Base using (ι; P; Ar)
open import Spec.Lang.Syntax
open import Spec.Lang.Eval 𝕊
open import Spec.Lang.AD using (lookupE; ∇₀)
open import Spec.Model.ChainExample using (Γ; chain; seed)
open import Spec.Proofs.Chain.Typed using (here; base-env; seed-env)
open import Spec.Proofs.Chain.Inline 𝕊 using (PF; ValCons; inl; base-env₀)
open import Spec.Proofs.Chain 𝕊 laws using (Consistent; chain-∇-correct)

open Scalar 𝕊 using (R; 0#; 1#; _+_; _*_)

pf : PF chain
pf = (tt , (var v₁ ⊠ var v₀ , refl)) , (var v₀ ⊠ var v₀ , refl)

-- the inlined objective
_ : inl chain pf v₀ ≡ (var v₁ ⊠ var v₀) ⊠ (var v₁ ⊠ var v₀)
_ = refl

module _ (a b : Ar (ι 5) R) where

  x y dy dx : Ar (ι 5) R
  x   i = a i * b i
  y   i = x i * x i
  dy i = 0# + 1#
  dx i = (0# + dy i * x i) + dy i * x i

  γ : Env (Γ ▹ ar (ι 5) ▹ ar (ι 5) ▹ ar (ι 5) ▹ ar (ι 5))
  γ = (((((tt , a) , b) , dx) , x) , dy) , y

  values : ValCons chain γ
  values = (λ i → refl) , (λ i → refl) , tt

  placeholders : Consistent chain here γ (seed-env v₀ seed)
  placeholders = (λ i → refl) , (λ i → refl) , tt

  -- d_a and d_b through the chain are those of (a · b) · (a · b)
  example : ∀ (z : ar (ι 5) ∈ Γ) (i : P (ι 5))
          → ⟦ lookupE {Γ} (base-env chain v₀ seed) z ⟧ γ i
            ≡ ⟦ lookupE {Γ} (∇₀ {Δ = Γ} ((var v₁ ⊠ var v₀) ⊠ (var v₁ ⊠ var v₀)) one) z ⟧ ((tt , a) , b) i
  example = chain-∇-correct chain pf v₀ seed one γ values placeholders (λ i → refl)
