{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- One-hot tangents: pairing a gradient environment with the tangent
-- that is 1 at one position of one variable and 0 everywhere else
-- reads off that entry's value (ip-onehot).  This turns an adjoint
-- statement (equal pairings with every tangent) into equality of the
-- gradient entries, position by position (ip-determines).
------------------------------------------------------------------------
open import Spec.Scalar using (Scalar)
open import Spec.Scalar.Laws using (Laws)

module Spec.Proofs.Chain.OneHot (𝕊 : Scalar) (laws : Laws 𝕊) where

open import Data.Empty using (⊥-elim)
open import Data.Product using (_,_)
open import Relation.Nullary using (yes; no; ¬_)
open import Relation.Binary.PropositionalEquality hiding (subst)

open import Spec.Array.Base using (S; P; Ar; K)
open import Data.Nat using (zero; suc)
open import Spec.Lang.Syntax
open import Spec.Lang.Eval 𝕊
open import Spec.Lang.AD using (EnvE; lookupE)
open import Spec.Proofs.Forward 𝕊 using (TEnv)
open import Spec.Proofs.AD.Env 𝕊 laws

open Scalar 𝕊 using (R; 0#; 1#; _+_; _*_)
open Laws laws

private
  variable
    Γ Δ Ξ : Ctx
    s : S

-- the zero tangent
tzero : TEnv Γ
tzero {ε}        = _
tzero {Γ ▹ ar s} = tzero {Γ} , K 0#
tzero {Γ ▹ ix s} = tzero {Γ}

-- the indicator of a position
ind : P s → Ar s R
ind i j with j ≟ₚ i
... | yes _ = 1#
... | no  _ = 0#

ind-ne : (i j : P s) → ¬ j ≡ i → ind i j ≡ 0#
ind-ne i j ne with j ≟ₚ i
... | yes e = ⊥-elim (ne e)
... | no  _ = refl

ind-eq : (i : P s) → ind i i ≡ 1#
ind-eq i with i ≟ₚ i
... | yes _ = refl
... | no ne = ⊥-elim (ne refl)

⟨⟩-ind : (a : Ar s R) (i : P s) → ⟨ a , ind i ⟩ ≡ a i
⟨⟩-ind a i =
  trans (ΣR-single i (λ j ne → trans (cong (a j *_) (ind-ne i j ne)) (zeroʳ (a j))))
        (trans (cong (a i *_) (ind-eq i)) (*-identityʳ (a i)))

-- the tangent 1 at position i of x, 0 elsewhere
onehot : ar s ∈ Γ → P s → TEnv Γ
onehot {Γ = Γ ▹ ar _} v₀     i = tzero {Γ} , ind i
onehot {Γ = Γ ▹ ar _} (var# (suc nx) px) i = onehot {Γ = Γ} (var# nx px) i , K 0#
onehot {Γ = Γ ▹ ix _} (var# (suc nx) px) i = onehot {Γ = Γ} (var# nx px) i

ip-tzero : (Γ : Ctx) (δ : EnvE Γ Δ) (ρ : Env Δ) → ip Γ δ ρ (tzero {Γ}) ≡ 0#
ip-tzero ε          δ       ρ = refl
ip-tzero (Γ ▹ ar s) (δ , e) ρ =
  trans (cong₂ _+_ (ip-tzero Γ δ ρ) (⟨⟩-zeroʳ (⟦ e ⟧ ρ))) (+-identityˡ 0#)
ip-tzero (Γ ▹ ix s) δ       ρ = ip-tzero Γ δ ρ

ip-onehot : (Γ : Ctx) (δ : EnvE Γ Δ) (ρ : Env Δ) (x : ar s ∈ Γ) (i : P s)
          → ip Γ δ ρ (onehot x i) ≡ ⟦ lookupE {Γ} δ x ⟧ ρ i
ip-onehot (Γ ▹ ar _) (δ , e) ρ (var# zero refl) i =
  trans (cong₂ _+_ (ip-tzero Γ δ ρ) (⟨⟩-ind (⟦ e ⟧ ρ) i)) (+-identityˡ _)
ip-onehot (Γ ▹ ar _) (δ , e) ρ (var# (suc n) p) i =
  trans (cong₂ _+_ (ip-onehot Γ δ ρ (var# n p) i) (⟨⟩-zeroʳ (⟦ e ⟧ ρ))) (+-identityʳ _)
ip-onehot (Γ ▹ ix _) δ ρ (var# (suc n) p) i = ip-onehot Γ δ ρ (var# n p) i

-- environments that pair equally with every tangent agree entrywise
ip-determines : (Γ : Ctx) (δ : EnvE Γ Δ) (ρ : Env Δ) (δ′ : EnvE Γ Ξ) (ρ′ : Env Ξ)
              → (∀ v → ip Γ δ ρ v ≡ ip Γ δ′ ρ′ v)
              → (x : ar s ∈ Γ) (i : P s) → ⟦ lookupE {Γ} δ x ⟧ ρ i ≡ ⟦ lookupE {Γ} δ′ x ⟧ ρ′ i
ip-determines Γ δ ρ δ′ ρ′ h x i =
  trans (sym (ip-onehot Γ δ ρ x i)) (trans (h (onehot x i)) (ip-onehot Γ δ′ ρ′ x i))
