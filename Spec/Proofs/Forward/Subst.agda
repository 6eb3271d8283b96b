{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- The forward derivative commutes with renaming and substitution
-- (D-ren, D-sub): differentiating subst σ e in direction w is
-- differentiating e in the direction whose x-th entry is the
-- derivative of σ x -- the chain rule for inlining a let-binding.
-- Stated pointwise, like eval-ren/eval-sub (Spec.Proofs.Ren, .Sub),
-- whose hypotheses on the values it also takes.  No law of the
-- scalars is needed.
------------------------------------------------------------------------
open import Spec.Scalar using (Scalar)

module Spec.Proofs.Forward.Subst (𝕊 : Scalar) where

open import Data.Fin as F using (Fin)
open import Data.Product using (_,_)
open import Relation.Binary.PropositionalEquality hiding (subst)

open import Spec.Array.Base as A using (S; ι; _⊗_; P; Ar)
open import Spec.Array.Index as Ix using (_⊕ₚ_; combine)
open import Data.Nat using (zero; suc)
open import Spec.Lang.Syntax
open import Spec.Lang.Subst
open import Spec.Lang.Eval 𝕊
open import Spec.Proofs.Val 𝕊
open import Spec.Proofs.Ren 𝕊 using (EnvRen; ext-EnvRen; eval-ren)
open import Spec.Proofs.Sub 𝕊 using (EnvSub; exts-EnvSub; eval-sub)
open import Spec.Proofs.Forward 𝕊

open Scalar 𝕊 using (R; 1#; _+_; _*_; -_) renaming (scaledown to scaledownʳ)

private
  variable
    Γ Δ : Ctx
    s : S

infix 4 _≈_
_≈_ : Ar s R → Ar s R → Set
a ≈ b = ∀ i → a i ≡ b i

-- the derivative of max respects equal arguments
max-D-cong : ∀ {a a′ b b′ da da′ db db′ : R} → a ≡ a′ → b ≡ b′ → da ≡ da′ → db ≡ db′
           → max-sel a b * da + (1# + - max-sel a b) * db ≡ max-sel a′ b′ * da′ + (1# + - max-sel a′ b′) * db′
max-D-cong refl refl refl refl = refl

------------------------------------------------------------------------
-- Renaming

TRen : Ren Γ Δ → TEnv Δ → TEnv Γ → Set
TRen {Γ} ρ w t = ∀ {s} (x : ar s ∈ Γ) → tlookup w (ρ x) ≈ tlookup {Γ} t x

ext-TRen : ∀ {u} {ρ : Ren Γ Δ} {w : TEnv Δ} {t : TEnv Γ}
         → TRen ρ w t → TRen (ext {ip = ix u} ρ) w t
ext-TRen h (var# zero ())
ext-TRen h (var# (suc n) p) = h (var# n p)

D-ren : (ρ : Ren Γ Δ) {γ : Env Δ} {δ : Env Γ} {w : TEnv Δ} {t : TEnv Γ}
      → EnvRen ρ γ δ → TRen ρ w t
      → (e : E Γ (ar s)) → D⟦ ren ρ e ⟧ γ w ≈ D⟦ e ⟧ δ t
D-ren ρ H T (var x) = T x
D-ren ρ H T zero = λ _ → refl
D-ren ρ H T one  = λ _ → refl
D-ren ρ H T (imaps e) = λ i → D-ren (ext ρ) (ext-EnvRen H i) (ext-TRen T) e (ι F.zero)
D-ren ρ {δ = δ} {t = t} H T (sels e i) = λ _ →
  trans (D-ren ρ H T e _) (cong (D⟦ e ⟧ δ t) (eval-ren ρ H i))
D-ren ρ H T (imap e) = λ { (i ⊗ j) → D-ren (ext ρ) (ext-EnvRen H i) (ext-TRen T) e j }
D-ren ρ {δ = δ} {t = t} H T (sel e i) = λ j →
  trans (D-ren ρ H T e _) (cong (λ y → D⟦ e ⟧ δ t (y ⊗ j)) (eval-ren ρ H i))
D-ren ρ H T (imapb m e) = λ k →
  D-ren (ext ρ) (ext-EnvRen H (Ix.div m k)) (ext-TRen T) e (Ix.mod m k)
D-ren ρ {δ = δ} {t = t} H T (selb m e i) = λ j →
  trans (D-ren ρ H T e _) (cong (λ y → D⟦ e ⟧ δ t (combine m y j)) (eval-ren ρ H i))
D-ren ρ H T (sum e) = Σ-cong λ i → D-ren (ext ρ) (ext-EnvRen H i) (ext-TRen T) e
D-ren ρ H T (zero-but i j e) = zero-but-cong (eval-ren ρ H i) (eval-ren ρ H j) (D-ren ρ H T e)
D-ren ρ {δ = δ} {t = t} H T (slide i sp e su) = λ j →
  trans (D-ren ρ H T e _) (cong (λ y → D⟦ e ⟧ δ t ((y ⊕ₚ j) su sp)) (eval-ren ρ H i))
D-ren ρ H T (backslide i e su sp) = backslide-cong su sp (eval-ren ρ H i) (D-ren ρ H T e)
D-ren ρ H T (un f e) = λ k →
  cong₂ (λ x y → f′ f x * y) (eval-ren ρ H e k) (D-ren ρ H T e k)
D-ren ρ H T (bin plus e e₁) = λ k → cong₂ _+_ (D-ren ρ H T e k) (D-ren ρ H T e₁ k)
D-ren ρ H T (bin mul e e₁) = λ k →
  cong₂ _+_ (cong₂ _*_ (D-ren ρ H T e k) (eval-ren ρ H e₁ k))
            (cong₂ _*_ (eval-ren ρ H e k) (D-ren ρ H T e₁ k))
D-ren ρ H T (bin max e e₁) = λ k →
  max-D-cong (eval-ren ρ H e k) (eval-ren ρ H e₁ k) (D-ren ρ H T e k) (D-ren ρ H T e₁ k)
D-ren ρ H T (scaledown n e) = λ k → cong (scaledownʳ n) (D-ren ρ H T e k)
D-ren ρ H T (minus e) = λ k → cong -_ (D-ren ρ H T e k)
D-ren ρ H T (ix-minus i j sp su e) =
  ix-minus-cong sp su (eval-ren ρ H i) (eval-ren ρ H j)
    (λ k → D-ren (ext ρ) (ext-EnvRen H k) (ext-TRen T) e)
D-ren ρ H T (ix-minusᵣ i j sp su e) =
  ix-minusᵣ-cong sp su (eval-ren ρ H i) (eval-ren ρ H j)
    (λ k → D-ren (ext ρ) (ext-EnvRen H k) (ext-TRen T) e)

-- weakening by an index variable
D-↑ : ∀ {u} (e : E Γ (ar s)) (γ : Env Γ) (i : P u) (w : TEnv Γ)
    → D⟦ ↑_ {ip = ix u} e ⟧ (γ , i) w ≈ D⟦ e ⟧ γ w
D-↑ e γ i w = D-ren vₛ (λ {is} x → Same-refl is (lookup x γ)) (λ x _ → refl) e

------------------------------------------------------------------------
-- Substitution

TSub : Sub Γ Δ → Env Δ → TEnv Δ → TEnv Γ → Set
TSub {Γ} σ γ w t = ∀ {s} (x : ar s ∈ Γ) → D⟦ σ x ⟧ γ w ≈ tlookup {Γ} t x

exts-TSub : ∀ {u} {σ : Sub Γ Δ} {γ : Env Δ} {w : TEnv Δ} {t : TEnv Γ}
          → TSub σ γ w t → (i : P u) → TSub (exts {ip = ix u} σ) (γ , i) w t
exts-TSub h i (var# zero ()) l
exts-TSub {σ = σ} {γ} {w} h i (var# (suc n) p) l = trans (D-↑ (σ (var# n p)) γ i w l) (h (var# n p) l)

D-sub : (σ : Sub Γ Δ) {γ : Env Δ} {δ : Env Γ} {w : TEnv Δ} {t : TEnv Γ}
      → EnvSub σ γ δ → TSub σ γ w t
      → (e : E Γ (ar s)) → D⟦ subst σ e ⟧ γ w ≈ D⟦ e ⟧ δ t
D-sub σ H T (var x) = T x
D-sub σ H T zero = λ _ → refl
D-sub σ H T one  = λ _ → refl
D-sub σ H T (imaps e) = λ i → D-sub (exts σ) (exts-EnvSub H i) (exts-TSub T i) e (ι F.zero)
D-sub σ {δ = δ} {t = t} H T (sels e i) = λ _ →
  trans (D-sub σ H T e _) (cong (D⟦ e ⟧ δ t) (eval-sub σ H i))
D-sub σ H T (imap e) = λ { (i ⊗ j) → D-sub (exts σ) (exts-EnvSub H i) (exts-TSub T i) e j }
D-sub σ {δ = δ} {t = t} H T (sel e i) = λ j →
  trans (D-sub σ H T e _) (cong (λ y → D⟦ e ⟧ δ t (y ⊗ j)) (eval-sub σ H i))
D-sub σ H T (imapb m e) = λ k →
  D-sub (exts σ) (exts-EnvSub H (Ix.div m k)) (exts-TSub T (Ix.div m k)) e (Ix.mod m k)
D-sub σ {δ = δ} {t = t} H T (selb m e i) = λ j →
  trans (D-sub σ H T e _) (cong (λ y → D⟦ e ⟧ δ t (combine m y j)) (eval-sub σ H i))
D-sub σ H T (sum e) = Σ-cong λ i → D-sub (exts σ) (exts-EnvSub H i) (exts-TSub T i) e
D-sub σ H T (zero-but i j e) = zero-but-cong (eval-sub σ H i) (eval-sub σ H j) (D-sub σ H T e)
D-sub σ {δ = δ} {t = t} H T (slide i sp e su) = λ j →
  trans (D-sub σ H T e _) (cong (λ y → D⟦ e ⟧ δ t ((y ⊕ₚ j) su sp)) (eval-sub σ H i))
D-sub σ H T (backslide i e su sp) = backslide-cong su sp (eval-sub σ H i) (D-sub σ H T e)
D-sub σ H T (un f e) = λ k →
  cong₂ (λ x y → f′ f x * y) (eval-sub σ H e k) (D-sub σ H T e k)
D-sub σ H T (bin plus e e₁) = λ k → cong₂ _+_ (D-sub σ H T e k) (D-sub σ H T e₁ k)
D-sub σ H T (bin mul e e₁) = λ k →
  cong₂ _+_ (cong₂ _*_ (D-sub σ H T e k) (eval-sub σ H e₁ k))
            (cong₂ _*_ (eval-sub σ H e k) (D-sub σ H T e₁ k))
D-sub σ H T (bin max e e₁) = λ k →
  max-D-cong (eval-sub σ H e k) (eval-sub σ H e₁ k) (D-sub σ H T e k) (D-sub σ H T e₁ k)
D-sub σ H T (scaledown n e) = λ k → cong (scaledownʳ n) (D-sub σ H T e k)
D-sub σ H T (minus e) = λ k → cong -_ (D-sub σ H T e k)
D-sub σ H T (ix-minus i j sp su e) =
  ix-minus-cong sp su (eval-sub σ H i) (eval-sub σ H j)
    (λ k → D-sub (exts σ) (exts-EnvSub H k) (exts-TSub T k) e)
D-sub σ H T (ix-minusᵣ i j sp su e) =
  ix-minusᵣ-cong sp su (eval-sub σ H i) (eval-sub σ H j)
    (λ k → D-sub (exts σ) (exts-EnvSub H k) (exts-TSub T k) e)
