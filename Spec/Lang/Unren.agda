{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- Undoing a renaming: given a partial inverse of ρ, find e′ with
-- e ≡ ren ρ e′, or fail (when e mentions a variable outside ρ's image).
--
-- Used to decide that a chain is placeholder-free (Spec.Lang.Chain.Clean):
-- a binding is placeholder-free when it is the renaming of an
-- expression over the clean scope, i.e. when it can be un-renamed.
------------------------------------------------------------------------
module Spec.Lang.Unren where

open import Data.Maybe using (Maybe; just; nothing)
open import Data.Product using (Σ; _,_)
open import Relation.Binary.PropositionalEquality using (_≡_; refl; cong; cong₂)

open import Data.Nat using (zero; suc)
open import Spec.Lang.Syntax
open import Spec.Lang.Subst using (Ren; ren; ext)

private
  variable
    Γ Δ : Ctx
    is ip : IS

-- A partial inverse of a renaming: every variable of Δ, if it is ρ x,
-- with that x.
Inv : Ren Γ Δ → Set
Inv {Γ} {Δ} ρ = ∀ {is} (y : is ∈ Δ) → Maybe (Σ (is ∈ Γ) λ x → y ≡ ρ x)

inv-ext : {ρ : Ren Γ Δ} → Inv ρ → Inv (ext {ip = ip} ρ)
inv-ext inv (var# zero refl) = just (v₀ , refl)
inv-ext inv (var# (suc n) p) with inv (var# n p)
... | just (x , eq) = just (vₛ x , cong vₛ eq)
... | nothing       = nothing

-- The preimage of an expression.
Pre : Ren Γ Δ → E Δ is → Set
Pre {Γ} {is = is} ρ e = Σ (E Γ is) λ e′ → e ≡ ren ρ e′

-- Maybe's bind, spelled out (Spec.Proofs.Chain.Clean reasons about it).
_>>=_ : ∀ {A B : Set} → Maybe A → (A → Maybe B) → Maybe B
just a  >>= f = f a
nothing >>= f = nothing

private
  cong₃ : ∀ {A B C D : Set} (f : A → B → C → D) {a a′ b b′ c c′}
        → a ≡ a′ → b ≡ b′ → c ≡ c′ → f a b c ≡ f a′ b′ c′
  cong₃ f refl refl refl = refl

unren : (ρ : Ren Γ Δ) → Inv ρ → (e : E Δ is) → Maybe (Pre ρ e)
unren ρ inv (var y) with inv y
... | just (x , eq) = just (var x , cong var eq)
... | nothing       = nothing
unren ρ inv zero = just (zero , refl)
unren ρ inv one  = just (one , refl)
unren ρ inv (imaps e) = unren (ext ρ) (inv-ext inv) e >>= λ { (e′ , p) → just (imaps e′ , cong imaps p) }
unren ρ inv (sels a i) =
  unren ρ inv a >>= λ { (a′ , p) → unren ρ inv i >>= λ { (i′ , q) → just (sels a′ i′ , cong₂ sels p q) } }
unren ρ inv (imap e) = unren (ext ρ) (inv-ext inv) e >>= λ { (e′ , p) → just (imap e′ , cong imap p) }
unren ρ inv (sel a i) =
  unren ρ inv a >>= λ { (a′ , p) → unren ρ inv i >>= λ { (i′ , q) → just (sel a′ i′ , cong₂ sel p q) } }
unren ρ inv (imapb m e) =
  unren (ext ρ) (inv-ext inv) e >>= λ { (e′ , p) → just (imapb m e′ , cong (imapb m) p) }
unren ρ inv (selb m a i) =
  unren ρ inv a >>= λ { (a′ , p) → unren ρ inv i >>= λ { (i′ , q) → just (selb m a′ i′ , cong₂ (selb m) p q) } }
unren ρ inv (sum e) = unren (ext ρ) (inv-ext inv) e >>= λ { (e′ , p) → just (sum e′ , cong sum p) }
unren ρ inv (zero-but i j a) =
  unren ρ inv i >>= λ { (i′ , p) → unren ρ inv j >>= λ { (j′ , q) → unren ρ inv a >>= λ { (a′ , r) →
    just (zero-but i′ j′ a′ , cong₃ zero-but p q r) } } }
unren ρ inv (slide i sp a su) =
  unren ρ inv i >>= λ { (i′ , p) → unren ρ inv a >>= λ { (a′ , q) →
    just (slide i′ sp a′ su , cong₂ (λ x y → slide x sp y su) p q) } }
unren ρ inv (backslide i a su sp) =
  unren ρ inv i >>= λ { (i′ , p) → unren ρ inv a >>= λ { (a′ , q) →
    just (backslide i′ a′ su sp , cong₂ (λ x y → backslide x y su sp) p q) } }
unren ρ inv (un f a) = unren ρ inv a >>= λ { (a′ , p) → just (un f a′ , cong (un f) p) }
unren ρ inv (bin op a b) =
  unren ρ inv a >>= λ { (a′ , p) → unren ρ inv b >>= λ { (b′ , q) → just (bin op a′ b′ , cong₂ (bin op) p q) } }
unren ρ inv (scaledown n a) = unren ρ inv a >>= λ { (a′ , p) → just (scaledown n a′ , cong (scaledown n) p) }
unren ρ inv (minus a) = unren ρ inv a >>= λ { (a′ , p) → just (minus a′ , cong minus p) }
unren ρ inv (ix-const i) = just (ix-const i , refl)
unren ρ inv (div m i) = unren ρ inv i >>= λ { (i′ , p) → just (div m i′ , cong (div m) p) }
unren ρ inv (mod m i) = unren ρ inv i >>= λ { (i′ , p) → just (mod m i′ , cong (mod m) p) }
unren ρ inv (ix-plus i j su sp) =
  unren ρ inv i >>= λ { (i′ , p) → unren ρ inv j >>= λ { (j′ , q) →
    just (ix-plus i′ j′ su sp , cong₂ (λ x y → ix-plus x y su sp) p q) } }
unren ρ inv (argmax w e) =
  unren (ext ρ) (inv-ext inv) e >>= λ { (e′ , p) → just (argmax w e′ , cong (argmax w) p) }
unren ρ inv (ix-minus i j sp su e) =
  unren ρ inv i >>= λ { (i′ , p) → unren ρ inv j >>= λ { (j′ , q) →
    unren (ext ρ) (inv-ext inv) e >>= λ { (e′ , r) →
      just (ix-minus i′ j′ sp su e′ , cong₃ (λ x y z → ix-minus x y sp su z) p q r) } } }
unren ρ inv (ix-minusᵣ i j sp su e) =
  unren ρ inv i >>= λ { (i′ , p) → unren ρ inv j >>= λ { (j′ , q) →
    unren (ext ρ) (inv-ext inv) e >>= λ { (e′ , r) →
      just (ix-minusᵣ i′ j′ sp su e′ , cong₃ (λ x y z → ix-minusᵣ x y sp su z) p q r) } } }
