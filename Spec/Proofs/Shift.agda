{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- Renamings that agree on every variable give the same term
-- (ren-cong), and the offset renaming of Spec.Lang.Shift is weakening
-- composed, variable for variable (shift-vₛ, shift-vₛvₛ).
------------------------------------------------------------------------
module Spec.Proofs.Shift where

open import Data.Nat using (ℕ; zero; suc; _+_)
open import Data.Nat.Properties using (+-suc)
open import Relation.Binary.PropositionalEquality using (_≡_; refl; trans; sym; cong; cong₂)

open import Spec.Lang.Syntax
open import Spec.Lang.Subst using (Ren; ren; ext)
open import Spec.Lang.Shift
open import Spec.Lang.Var using (var-≡)

private
  variable
    Γ Δ Φ : Ctx
    is ip : IS
    m     : ℕ

------------------------------------------------------------------------
-- Pointwise-equal renamings

infix 4 _≗ᵣ_

_≗ᵣ_ : Ren Γ Δ → Ren Γ Δ → Set
_≗ᵣ_ {Γ} ρ ρ′ = ∀ {is} (x : is ∈ Γ) → ρ x ≡ ρ′ x

ext-cong : {ρ ρ′ : Ren Γ Δ} → ρ ≗ᵣ ρ′ → ext {ip = ip} ρ ≗ᵣ ext ρ′
ext-cong h (var# zero refl)  = refl
ext-cong h (var# (suc n) p) = cong vₛ (h (var# n p))

private
  cong₃ : ∀ {A B C D : Set} (f : A → B → C → D) {a a′ b b′ c c′}
        → a ≡ a′ → b ≡ b′ → c ≡ c′ → f a b c ≡ f a′ b′ c′
  cong₃ f refl refl refl = refl

ren-cong : {ρ ρ′ : Ren Γ Δ} → ρ ≗ᵣ ρ′ → (e : E Γ is) → ren ρ e ≡ ren ρ′ e
ren-cong h (var x)                 = cong var (h x)
ren-cong h zero                    = refl
ren-cong h one                     = refl
ren-cong h (imaps e)               = cong imaps (ren-cong (ext-cong h) e)
ren-cong h (sels e i)              = cong₂ sels (ren-cong h e) (ren-cong h i)
ren-cong h (imap e)                = cong imap (ren-cong (ext-cong h) e)
ren-cong h (sel e i)               = cong₂ sel (ren-cong h e) (ren-cong h i)
ren-cong h (imapb m e)             = cong (imapb m) (ren-cong (ext-cong h) e)
ren-cong h (selb m e i)            = cong₂ (selb m) (ren-cong h e) (ren-cong h i)
ren-cong h (sum e)                 = cong sum (ren-cong (ext-cong h) e)
ren-cong h (zero-but i j e)        = cong₃ zero-but (ren-cong h i) (ren-cong h j) (ren-cong h e)
ren-cong h (slide i sp e su)       = cong₂ (λ a b → slide a sp b su) (ren-cong h i) (ren-cong h e)
ren-cong h (backslide i e su sp)   = cong₂ (λ a b → backslide a b su sp) (ren-cong h i) (ren-cong h e)
ren-cong h (un f e)                = cong (un f) (ren-cong h e)
ren-cong h (bin op e e₁)           = cong₂ (bin op) (ren-cong h e) (ren-cong h e₁)
ren-cong h (scaledown n e)         = cong (scaledown n) (ren-cong h e)
ren-cong h (minus e)               = cong minus (ren-cong h e)
ren-cong h (ix-const i)            = refl
ren-cong h (div m i)               = cong (div m) (ren-cong h i)
ren-cong h (mod m i)               = cong (mod m) (ren-cong h i)
ren-cong h (ix-plus i j su sp)     = cong₂ (λ a b → ix-plus a b su sp) (ren-cong h i) (ren-cong h j)
ren-cong h (argmax w e)            = cong (argmax w) (ren-cong (ext-cong h) e)
ren-cong h (ix-minus i j sp su e)  =
  cong₃ (λ a b c → ix-minus a b sp su c) (ren-cong h i) (ren-cong h j) (ren-cong (ext-cong h) e)
ren-cong h (ix-minusᵣ i j sp su e) =
  cong₃ (λ a b c → ix-minusᵣ a b sp su c) (ren-cong h i) (ren-cong h j) (ren-cong (ext-cong h) e)

------------------------------------------------------------------------
-- The offset renaming is composed weakening

shift-vₛ : (o : Offset (Δ ▹ ip) Φ) (x : is ∈ Δ) → shift (off₁ o) x ≡ shift o (vₛ x)
shift-vₛ (offset m eq) (var# n p) = var-≡ (sym (+-suc m n))

shift-vₛvₛ : ∀ {iq} (o : Offset (Δ ▹ iq ▹ ip) Φ) (x : is ∈ Δ) → shift (off₂ o) x ≡ shift o (vₛ (vₛ x))
shift-vₛvₛ (offset m eq) (var# n p) = var-≡ (sym (trans (+-suc m (suc n)) (cong suc (+-suc m n))))

-- no offset: the identity
shift-0 : (x : is ∈ Φ) → shift off₀ x ≡ x
shift-0 x = refl
