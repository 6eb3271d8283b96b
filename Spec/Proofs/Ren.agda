{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- Renaming preserves meaning (eval-ren), and its instances: weakening
-- by a fresh innermost variable (eval-↑), weakening at any variable
-- (eval-wk) and exchanging two neighbouring variables (eval-ctx-swap).
--
-- A renaming ρ : Ren Γ Δ is compatible with environments γ : Env Δ and
-- δ : Env Γ when looking up ρ x in γ gives the same value as looking
-- up x in δ (EnvRen).  Then ren ρ e in γ means what e means in δ.
-- "The same" is `Same` of Spec.Proofs.Val: pointwise for arrays.
-- No law of the scalars is needed.
------------------------------------------------------------------------
open import Spec.Scalar using (Scalar)

module Spec.Proofs.Ren (𝕊 : Scalar) where

open import Data.Fin as F using (Fin)
open import Data.Product using (_,_)
open import Relation.Binary.PropositionalEquality

open import Spec.Array.Base using (S; ι; _⊗_; P)
open import Spec.Array.Index as Ix using (_⊕ₚ_; combine)
open import Data.Nat using (zero; suc)
open import Spec.Lang.Syntax
open import Spec.Lang.Subst
open import Spec.Lang.Eval 𝕊
open import Spec.Proofs.Val 𝕊

private
  variable
    Γ Δ : Ctx
    is ip : IS

------------------------------------------------------------------------
-- Compatible environments

EnvRen : Ren Γ Δ → Env Δ → Env Γ → Set
EnvRen {Γ} ρ γ δ = ∀ {is} (x : is ∈ Γ) → Same is (lookup (ρ x) γ) (lookup x δ)

ext-EnvRen : {ρ : Ren Γ Δ} {γ : Env Δ} {δ : Env Γ}
           → EnvRen ρ γ δ → (a : Val ip) → EnvRen (ext {ip = ip} ρ) (γ , a) (δ , a)
ext-EnvRen {ip = ip} H a (var# zero refl)  = Same-refl ip a
ext-EnvRen           H a (var# (suc n) p) = H (var# n p)

------------------------------------------------------------------------
-- The theorem

eval-ren : (ρ : Ren Γ Δ) {γ : Env Δ} {δ : Env Γ} → EnvRen ρ γ δ
         → (e : E Γ is) → Same is (⟦ ren ρ e ⟧ γ) (⟦ e ⟧ δ)
eval-ren ρ H (var x)       = H x
eval-ren ρ H zero          = λ _ → refl
eval-ren ρ H one           = λ _ → refl
eval-ren ρ H (imaps e)     = λ i → eval-ren (ext ρ) (ext-EnvRen H i) e (ι F.zero)
eval-ren ρ {δ = δ} H (sels e i) = λ _ →
  trans (eval-ren ρ H e _) (cong (⟦ e ⟧ δ) (eval-ren ρ H i))
eval-ren ρ H (imap e)      = λ { (i ⊗ j) → eval-ren (ext ρ) (ext-EnvRen H i) e j }
eval-ren ρ {δ = δ} H (sel e i) = λ j →
  trans (eval-ren ρ H e _) (cong (λ i′ → ⟦ e ⟧ δ (i′ ⊗ j)) (eval-ren ρ H i))
eval-ren ρ H (imapb m e)   = λ k →
  eval-ren (ext ρ) (ext-EnvRen H (Ix.div m k)) e (Ix.mod m k)
eval-ren ρ {δ = δ} H (selb m e i) = λ j →
  trans (eval-ren ρ H e _) (cong (λ i′ → ⟦ e ⟧ δ (combine m i′ j)) (eval-ren ρ H i))
eval-ren ρ H (sum e)       = Σ-cong λ i → eval-ren (ext ρ) (ext-EnvRen H i) e
eval-ren ρ H (zero-but i j e) =
  zero-but-cong (eval-ren ρ H i) (eval-ren ρ H j) (eval-ren ρ H e)
eval-ren ρ {δ = δ} H (slide i sp e su) = λ j →
  trans (eval-ren ρ H e _) (cong (λ i′ → ⟦ e ⟧ δ ((i′ ⊕ₚ j) su sp)) (eval-ren ρ H i))
eval-ren ρ H (backslide i e su sp) = backslide-cong su sp (eval-ren ρ H i) (eval-ren ρ H e)
eval-ren ρ H (un f e)      = λ k → cong (Scalar.fn 𝕊 f) (eval-ren ρ H e k)
eval-ren ρ H (bin op e e₁) = λ k → cong₂ (bop op) (eval-ren ρ H e k) (eval-ren ρ H e₁ k)
eval-ren ρ H (scaledown n e) = λ k → cong (Scalar.scaledown 𝕊 n) (eval-ren ρ H e k)
eval-ren ρ H (minus e)     = λ k → cong (Scalar.-_ 𝕊) (eval-ren ρ H e k)
eval-ren ρ H (ix-const i)  = refl
eval-ren ρ H (div m i)     = cong (Ix.div m) (eval-ren ρ H i)
eval-ren ρ H (mod m i)     = cong (Ix.mod m) (eval-ren ρ H i)
eval-ren ρ H (ix-plus i j su sp) =
  cong₂ (λ a b → (a ⊕ₚ b) su sp) (eval-ren ρ H i) (eval-ren ρ H j)
eval-ren ρ H (argmax w e) =
  argmax-sem-cong w λ i → eval-ren (ext ρ) (ext-EnvRen H i) e (ι F.zero)
eval-ren ρ H (ix-minus i j sp su e) =
  ix-minus-cong sp su (eval-ren ρ H i) (eval-ren ρ H j)
    (λ k → eval-ren (ext ρ) (ext-EnvRen H k) e)
eval-ren ρ H (ix-minusᵣ i j sp su e) =
  ix-minusᵣ-cong sp su (eval-ren ρ H i) (eval-ren ρ H j)
    (λ k → eval-ren (ext ρ) (ext-EnvRen H k) e)

------------------------------------------------------------------------
-- Weakening by a fresh innermost variable

eval-↑ : (e : E Γ is) (γ : Env Γ) (a : Val ip)
       → Same is (⟦ ↑_ {ip = ip} e ⟧ (γ , a)) (⟦ e ⟧ γ)
eval-↑ e γ a = eval-ren vₛ (λ {is} x → Same-refl is (lookup x γ)) e

------------------------------------------------------------------------
-- Weakening at a variable v: the environment without v

drop : (v : is ∈ Γ) → Env Γ → Env (Γ / v)
drop {Γ = _ ▹ _} (var# zero refl)  (γ , _) = γ
drop {Γ = _ ▹ _} (var# (suc n) p) (γ , a) = drop (var# n p) γ , a

lookup-wkv : (v : is ∈ Γ) (y : ip ∈ Γ / v) (γ : Env Γ)
           → lookup (wkv v y) γ ≡ lookup y (drop v γ)
lookup-wkv {Γ = _ ▹ _} (var# zero refl)  y                  (γ , a) = refl
lookup-wkv {Γ = _ ▹ _} (var# (suc n) p) (var# zero refl)  (γ , a) = refl
lookup-wkv {Γ = _ ▹ _} (var# (suc n) p) (var# (suc m) q) (γ , a) = lookup-wkv (var# n p) (var# m q) γ

eval-wk : (v : is ∈ Γ) (e : E (Γ / v) ip) (γ : Env Γ)
        → Same ip (⟦ wk v e ⟧ γ) (⟦ e ⟧ (drop v γ))
eval-wk v e γ = eval-ren (wkv v) (λ {is} y → ≡⇒Same is (lookup-wkv v y γ)) e

------------------------------------------------------------------------
-- Exchanging a variable with the next one inwards

swap-env : (x : is ∈ Γ) → Env Γ → Env (SwapAt Γ x)
swap-env {Γ = _ ▹ _}     (var# zero refl)       γ             = γ
swap-env {Γ = _ ▹ _ ▹ _} (var# (suc zero) refl) ((γ , a) , b) = (γ , b) , a
swap-env {Γ = _ ▹ _ ▹ _} (var# (suc (suc n)) p) (γ , b)       = swap-env (var# (suc n) p) γ , b

lookup-swapv : (x : is ∈ Γ) (y : ip ∈ Γ) (γ : Env Γ)
             → lookup (swapv x y) (swap-env x γ) ≡ lookup y γ
lookup-swapv {Γ = _ ▹ _}     (var# zero refl)       y                      γ             = refl
lookup-swapv {Γ = _ ▹ _ ▹ _} (var# (suc zero) refl) (var# zero refl)       ((γ , a) , b) = refl
lookup-swapv {Γ = _ ▹ _ ▹ _} (var# (suc zero) refl) (var# (suc zero) refl) ((γ , a) , b) = refl
lookup-swapv {Γ = _ ▹ _ ▹ _} (var# (suc zero) refl) (var# (suc (suc m)) q) ((γ , a) , b) = refl
lookup-swapv {Γ = _ ▹ _ ▹ _} (var# (suc (suc n)) p) (var# zero refl)       (γ , b)       = refl
lookup-swapv {Γ = _ ▹ _ ▹ _} (var# (suc (suc n)) p) (var# (suc m) q)      (γ , b)       =
  lookup-swapv (var# (suc n) p) (var# m q) γ

eval-ctx-swap : (x : is ∈ Γ) (e : E Γ ip) (γ : Env Γ)
              → Same ip (⟦ ctx-swap x e ⟧ (swap-env x γ)) (⟦ e ⟧ γ)
eval-ctx-swap x e γ = eval-ren (swapv x) (λ {is} y → ≡⇒Same is (lookup-swapv x y γ)) e
