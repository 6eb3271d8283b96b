{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- Reverse-mode automatic differentiation of E, as a transformation of
-- E into E (paper §6).
--
-- A gradient environment `EnvE Γ Δ` holds one expression over Δ per
-- array variable of Γ (index variables have no derivative).
-- `∇ e s δ` adds to δ the contribution of e with seed (adjoint) s: for
-- every array variable x, the x-th entry grows by the derivative of e
-- with respect to x, applied (transposed) to s.  Binders (imaps, imap,
-- imapb, sum, ix-minus, ix-minusᵣ) differentiate their body in the
-- extended context from a zero environment and close the resulting
-- entries with the matching binder (`map-bind`), leaving the entries
-- the body does not touch as they were (`close`).
------------------------------------------------------------------------
module Spec.Lang.AD where

open import Data.Product using (_×_; _,_)
open import Data.Unit using (⊤; tt)
open import Function using (_∘_)

open import Spec.Array.Base using (S; unit)
open import Data.Nat using (zero; suc)
open import Relation.Binary.PropositionalEquality using (refl)
open import Spec.Lang.Syntax
open import Spec.Lang.Subst using (↑_)

private
  variable
    Γ Δ Φ Ξ : Ctx
    is      : IS
    s p u   : S

------------------------------------------------------------------------
-- Gradient environments

EnvE : Ctx → Ctx → Set
EnvE ε          Δ = ⊤
EnvE (Γ ▹ ar s) Δ = EnvE Γ Δ × E Δ (ar s)
EnvE (Γ ▹ ix s) Δ = EnvE Γ Δ

env-zero : EnvE Γ Δ
env-zero {ε}        = tt
env-zero {Γ ▹ ar s} = env-zero {Γ} , zero
env-zero {Γ ▹ ix s} = env-zero {Γ}

-- the entry of an array variable
lookupE : EnvE Γ Δ → ar s ∈ Γ → E Δ (ar s)
lookupE {Γ ▹ ar _} (δ , e) (var# zero refl)  = e
lookupE {Γ ▹ ar _} (δ , e) (var# (suc n) p) = lookupE {Γ} δ (var# n p)
lookupE {Γ ▹ ix _} δ       (var# (suc n) p) = lookupE {Γ} δ (var# n p)

update : EnvE Γ Δ → ar s ∈ Γ → (E Δ (ar s) → E Δ (ar s)) → EnvE Γ Δ
update {Γ ▹ ar _} (δ , e) (var# zero refl)  f = δ , f e
update {Γ ▹ ar _} (δ , e) (var# (suc n) p) f = update {Γ} δ (var# n p) f , e
update {Γ ▹ ix _} δ       (var# (suc n) p) f = update {Γ} δ (var# n p) f

env-map : (∀ {s} → E Δ (ar s) → E Φ (ar s)) → EnvE Γ Δ → EnvE Γ Φ
env-map {Γ = ε}        f δ       = tt
env-map {Γ = Γ ▹ ar _} f (δ , e) = env-map {Γ = Γ} f δ , f e
env-map {Γ = Γ ▹ ix _} f δ       = env-map {Γ = Γ} f δ

env-zipWith : (∀ {s} → E Δ (ar s) → E Φ (ar s) → E Ξ (ar s))
            → EnvE Γ Δ → EnvE Γ Φ → EnvE Γ Ξ
env-zipWith {Γ = ε}        f δ       δ′        = tt
env-zipWith {Γ = Γ ▹ ar _} f (δ , e) (δ′ , e′) = env-zipWith {Γ = Γ} f δ δ′ , f e e′
env-zipWith {Γ = Γ ▹ ix _} f δ       δ′        = env-zipWith {Γ = Γ} f δ δ′

------------------------------------------------------------------------
-- The derivative

-- The declared derivative of an elementwise function at e, as an
-- expression (its meaning is f′ f (⟦ e ⟧ ρ k), Spec.Proofs.Forward):
--   logistic′ = σ·(1 − σ), exp′ = exp, log′ = recip,
--   recip′ = −(recip · recip), sqrt′ = recip (sqrt + sqrt) (E has no
--   constant 2), relu′ = step, step′ = 0, detach′ = 0, erf′ = derf (E
--   has no constant 2/√π: derf is a primitive), derf′ = −((e + e) · derf).
-- ∇ (un f e) s passes the seed s ⊠ deriv f e on to e, except that
-- logistic keeps the paper's association (s ⊠ σ) ⊠ (1 − σ) (so the
-- CNN's dump is the paper's) and step and detach, whose derivatives
-- are zero, add nothing.  An index expression (argmax included) has
-- no derivative: the gradient of a maximum sels (imaps e) (argmax w e)
-- is that of the selection, the seed at the argmax.
deriv : Fn → E Δ (ar s) → E Δ (ar s)
deriv Fn.logistic e = logistic e ⊠ (one ⊞ minus (logistic e))
deriv Fn.exp      e = un Fn.exp e
deriv Fn.log      e = un Fn.recip e
deriv Fn.recip    e = minus (un Fn.recip e ⊠ un Fn.recip e)
deriv Fn.sqrt     e = un Fn.recip (un Fn.sqrt e ⊞ un Fn.sqrt e)
deriv Fn.relu     e = un Fn.step e
deriv Fn.step     e = zero
deriv Fn.detach   e = zero
deriv Fn.erf      e = un Fn.derf e
deriv Fn.derf     e = minus ((e ⊞ e) ⊠ un Fn.derf e)

-- The selector of max a b as an expression: step (a − b), 1 where a is
-- the larger, 0 where b is or they tie (its meaning is max-sel,
-- Spec.Proofs.Forward).  ∇ (a ⊔ b) s passes s ⊠ st on to a and
-- s ⊠ (1 − st) on to b.
max-step : E Δ (ar s) → E Δ (ar s) → E Δ (ar s)
max-step a b = un Fn.step (a ⊞ minus b)

-- Is an expression the literal zero?  (An entry a binder's body does
-- not touch stays the zero it started from.)
data Zero? {Γ s} : E Γ (ar s) → Set where
  is-zero : Zero? zero
  other : ∀ {e} → Zero? e

zero? : (e : E Γ (ar s)) → Zero? e
zero? zero = is-zero
zero? e    = other

-- `close b z d`: the body's entry z closed by the binder b, added to
-- the entry d; an untouched entry (z = zero, whose closure b zero
-- means 0) leaves d as it is, so a binder adds no node to the entries
-- of the variables its body does not read (Spec.Lang.AD.Sparse relies
-- on it).
close : (E (Δ ▹ ix u) (ar p) → E Δ (ar p)) → E (Δ ▹ ix u) (ar p) → E Δ (ar p) → E Δ (ar p)
close b z d with zero? z
... | is-zero = d
... | other = b z ⊞ d

-- ∇ e s δ: δ plus the gradient of e with seed s.
∇ : E Δ is → E Δ is → EnvE Δ Δ → EnvE Δ Δ

-- Differentiate a body under a binder (from zero), close every entry
-- with the binder `b` and add the result to δ.
map-bind : (∀ {q} → E (Δ ▹ ix u) (ar q) → E Δ (ar q))
         → E (Δ ▹ ix u) is → E (Δ ▹ ix u) is → EnvE Δ Δ → EnvE Δ Δ
map-bind {Δ = Δ} {u = u} b e s δ =
  env-zipWith {Γ = Δ} (close b) (∇ e s (env-zero {Δ ▹ ix u})) δ

-- the paper's map-sum: a binder that sums over its index
map-sum : E (Δ ▹ ix u) is → E (Δ ▹ ix u) is → EnvE Δ Δ → EnvE Δ Δ
map-sum = map-bind sum

∇ (var {is = ix _} x)     s δ = δ
∇ (var {is = ar _} x)     s δ = update δ x (_⊞ s)
∇ zero                    s δ = δ
∇ one                     s δ = δ
∇ (imaps e)               s   = map-bind sum e (sels (↑ s) (var v₀))
∇ (sels e i)              s   = ∇ e (imaps (zero-but (var v₀) (↑ i) (↑ s)))
∇ (imap e)                s   = map-bind sum e (sel (↑ s) (var v₀))
∇ (sel e i)               s   = ∇ e (imap (zero-but (var v₀) (↑ i) (↑ s)))
∇ (imapb m e)             s   = map-bind sum e (selb m (↑ s) (var v₀))
∇ (selb m e i)            s   = ∇ e (imapb m (zero-but (var v₀) (↑ i) (↑ s)))
∇ (sum e)                 s   = map-bind sum e (↑ s)
∇ (zero-but i j e)        s   = ∇ e (zero-but i j s)
∇ (slide i sp e su)       s   = ∇ e (backslide i s su sp)
∇ (backslide i e su sp)   s   = ∇ e (slide i sp s su)
∇ (logistic e)            s   = ∇ e (s ⊠ logistic e ⊠ (one ⊞ minus (logistic e)))
∇ (un Fn.step e)          s δ = δ
∇ (un Fn.detach e)        s δ = δ
∇ (un f e)                s   = ∇ e (s ⊠ deriv f e)
∇ (e ⊞ e₁)                s   = ∇ e s ∘ ∇ e₁ s
∇ (e ⊠ e₁)                s   = ∇ e (s ⊠ e₁) ∘ ∇ e₁ (s ⊠ e)
∇ (e ⊔ e₁)                s   = ∇ e (s ⊠ max-step e e₁) ∘ ∇ e₁ (s ⊠ (one ⊞ minus (max-step e e₁)))
∇ (scaledown n e)         s   = ∇ e (scaledown n s)
∇ (minus e)               s   = ∇ e (minus s)
∇ (ix-const i)            s δ = δ
∇ (div m i)               s δ = δ
∇ (mod m i)               s δ = δ
∇ (ix-plus i j su sp)     s δ = δ
∇ (argmax w e)            s δ = δ
∇ (ix-minus i j sp su e)  s   = map-bind (ix-minus i j sp su) e (↑ s)
∇ (ix-minusᵣ i j sp su e) s   = map-bind (ix-minusᵣ i j sp su) e (↑ s)

-- The gradient of e with seed s, from zero.
∇₀ : E Δ is → E Δ is → EnvE Δ Δ
∇₀ {Δ = Δ} e s = ∇ e s (env-zero {Δ})
