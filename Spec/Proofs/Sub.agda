{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- Substitution preserves meaning (eval-sub), and its instance for
-- replacing one variable (eval-sub₁, the law behind `sub` of
-- Spec.Lang.Subst and the optimiser's inlining).
--
-- A substitution σ : Sub Γ Δ is compatible with γ : Env Δ and
-- δ : Env Γ when each σ x means in γ what x means in δ (EnvSub).  Then
-- subst σ e in γ means what e means in δ.  For one variable v, δ is γ
-- with the meaning of the replacement put back at v (`insert`).
-- No law of the scalars is needed.
------------------------------------------------------------------------
open import Spec.Scalar using (Scalar)

module Spec.Proofs.Sub (𝕊 : Scalar) where

open import Data.Fin as F using (Fin)
open import Data.Product using (_,_)
open import Relation.Binary.PropositionalEquality hiding (subst)

open import Spec.Array.Base using (S; ι; _⊗_; P)
open import Spec.Array.Index as Ix using (_⊕ₚ_; combine)
open import Data.Nat using (zero; suc)
open import Spec.Lang.Syntax
open import Spec.Lang.Subst
open import Spec.Lang.Eval 𝕊
open import Spec.Proofs.Val 𝕊
open import Spec.Proofs.Ren 𝕊 using (eval-↑)

private
  variable
    Γ Δ : Ctx
    is ip : IS

------------------------------------------------------------------------
-- Compatible environments

EnvSub : Sub Γ Δ → Env Δ → Env Γ → Set
EnvSub {Γ} σ γ δ = ∀ {is} (x : is ∈ Γ) → Same is (⟦ σ x ⟧ γ) (lookup x δ)

exts-EnvSub : {σ : Sub Γ Δ} {γ : Env Δ} {δ : Env Γ}
            → EnvSub σ γ δ → (a : Val ip) → EnvSub (exts {ip = ip} σ) (γ , a) (δ , a)
exts-EnvSub {ip = ip} H a (var# zero refl) = Same-refl ip a
exts-EnvSub {σ = σ} {γ} H a {is} (var# (suc n) p) =
  Same-trans is (eval-↑ (σ (var# n p)) γ a) (H (var# n p))

------------------------------------------------------------------------
-- The theorem

eval-sub : (σ : Sub Γ Δ) {γ : Env Δ} {δ : Env Γ} → EnvSub σ γ δ
         → (e : E Γ is) → Same is (⟦ subst σ e ⟧ γ) (⟦ e ⟧ δ)
eval-sub σ H (var x)       = H x
eval-sub σ H zero          = λ _ → refl
eval-sub σ H one           = λ _ → refl
eval-sub σ H (imaps e)     = λ i → eval-sub (exts σ) (exts-EnvSub H i) e (ι F.zero)
eval-sub σ {δ = δ} H (sels e i) = λ _ →
  trans (eval-sub σ H e _) (cong (⟦ e ⟧ δ) (eval-sub σ H i))
eval-sub σ H (imap e)      = λ { (i ⊗ j) → eval-sub (exts σ) (exts-EnvSub H i) e j }
eval-sub σ {δ = δ} H (sel e i) = λ j →
  trans (eval-sub σ H e _) (cong (λ i′ → ⟦ e ⟧ δ (i′ ⊗ j)) (eval-sub σ H i))
eval-sub σ H (imapb m e)   = λ k →
  eval-sub (exts σ) (exts-EnvSub H (Ix.div m k)) e (Ix.mod m k)
eval-sub σ {δ = δ} H (selb m e i) = λ j →
  trans (eval-sub σ H e _) (cong (λ i′ → ⟦ e ⟧ δ (combine m i′ j)) (eval-sub σ H i))
eval-sub σ H (sum e)       = Σ-cong λ i → eval-sub (exts σ) (exts-EnvSub H i) e
eval-sub σ H (zero-but i j e) =
  zero-but-cong (eval-sub σ H i) (eval-sub σ H j) (eval-sub σ H e)
eval-sub σ {δ = δ} H (slide i sp e su) = λ j →
  trans (eval-sub σ H e _) (cong (λ i′ → ⟦ e ⟧ δ ((i′ ⊕ₚ j) su sp)) (eval-sub σ H i))
eval-sub σ H (backslide i e su sp) = backslide-cong su sp (eval-sub σ H i) (eval-sub σ H e)
eval-sub σ H (un f e)      = λ k → cong (Scalar.fn 𝕊 f) (eval-sub σ H e k)
eval-sub σ H (bin op e e₁) = λ k → cong₂ (bop op) (eval-sub σ H e k) (eval-sub σ H e₁ k)
eval-sub σ H (scaledown n e) = λ k → cong (Scalar.scaledown 𝕊 n) (eval-sub σ H e k)
eval-sub σ H (minus e)     = λ k → cong (Scalar.-_ 𝕊) (eval-sub σ H e k)
eval-sub σ H (ix-const i)  = refl
eval-sub σ H (div m i)     = cong (Ix.div m) (eval-sub σ H i)
eval-sub σ H (mod m i)     = cong (Ix.mod m) (eval-sub σ H i)
eval-sub σ H (ix-plus i j su sp) =
  cong₂ (λ a b → (a ⊕ₚ b) su sp) (eval-sub σ H i) (eval-sub σ H j)
eval-sub σ H (argmax w e) =
  argmax-sem-cong w λ i → eval-sub (exts σ) (exts-EnvSub H i) e (ι F.zero)
eval-sub σ H (ix-minus i j sp su e) =
  ix-minus-cong sp su (eval-sub σ H i) (eval-sub σ H j)
    (λ k → eval-sub (exts σ) (exts-EnvSub H k) e)
eval-sub σ H (ix-minusᵣ i j sp su e) =
  ix-minusᵣ-cong sp su (eval-sub σ H i) (eval-sub σ H j)
    (λ k → eval-sub (exts σ) (exts-EnvSub H k) e)

------------------------------------------------------------------------
-- Replacing one variable

-- γ with a value put back at v
insert : (v : is ∈ Γ) → Env (Γ / v) → Val is → Env Γ
insert {Γ = _ ▹ _} (var# zero refl)  γ       a = γ , a
insert {Γ = Γ ▹ _} (var# (suc n) p) (γ , b) a = insert {Γ = Γ} (var# n p) γ a , b

lookup-insert : (v : is ∈ Γ) (γ : Env (Γ / v)) (a : Val is) → lookup v (insert v γ a) ≡ a
lookup-insert {Γ = _ ▹ _} (var# zero refl)  γ       a = refl
lookup-insert {Γ = Γ ▹ _} (var# (suc n) p) (γ , b) a = lookup-insert {Γ = Γ} (var# n p) γ a

lookup-insert-wkv : (v : is ∈ Γ) (y : ip ∈ Γ / v) (γ : Env (Γ / v)) (a : Val is)
                  → lookup (wkv v y) (insert v γ a) ≡ lookup y γ
lookup-insert-wkv {Γ = _ ▹ _} (var# zero refl)  y                  γ       a = refl
lookup-insert-wkv {Γ = _ ▹ _} (var# (suc n) p) (var# zero refl)  (γ , b) a = refl
lookup-insert-wkv {Γ = Γ ▹ _} (var# (suc n) p) (var# (suc m) q) (γ , b) a =
  lookup-insert-wkv {Γ = Γ} (var# n p) (var# m q) γ a

sub-var-EnvSub : (v : is ∈ Γ) (e₁ : E (Γ / v) is) (γ : Env (Γ / v))
               → EnvSub (sub-var v e₁) γ (insert v γ (⟦ e₁ ⟧ γ))
sub-var-EnvSub {is = is} v e₁ γ x with eq? v x
... | eq              = ≡⇒Same is (sym (lookup-insert v γ (⟦ e₁ ⟧ γ)))
... | neq _ {- v -} y = ≡⇒Same _ (sym (lookup-insert-wkv v y γ (⟦ e₁ ⟧ γ)))

eval-sub₁ : (v : is ∈ Γ) (e : E Γ ip) (e₁ : E (Γ / v) is) (γ : Env (Γ / v))
          → Same ip (⟦ sub v e e₁ ⟧ γ) (⟦ e ⟧ (insert v γ (⟦ e₁ ⟧ γ)))
eval-sub₁ v e e₁ γ = eval-sub (sub-var v e₁) (sub-var-EnvSub v e₁ γ) e
