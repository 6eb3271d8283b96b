{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- Renaming, weakening and substitution for E (paper §5.2).
--
-- Everything is an instance of two folds: `ren` applies a renaming
-- (a map of variables), `subst` a substitution (a map of variables to
-- expressions).  Weakening, ↑, ctx-swap and `sub` are renamings and
-- substitutions of a particular kind, so one law about `ren`/`subst`
-- (eval-ren, eval-sub in Spec.Theorems) covers all of them.
--
--   Γ / v        the context Γ without the variable v
--   wkv, wk      from Γ / v back into Γ
--   Eq, eq?      decided equality of variables (with the residue of the
--                second variable in Γ / x when they differ)
--   sub v e e₁   e with the variable v replaced by e₁
--   SwapAt, ctx-swap   exchange a variable and the one inside it
--   str          strengthening of an index expression (used by Opt)
------------------------------------------------------------------------
module Spec.Lang.Subst where

open import Data.Maybe using (Maybe; just; nothing; _>>=_)

open import Data.Nat using (zero; suc)
open import Relation.Binary.PropositionalEquality using (refl)
open import Spec.Lang.Syntax

private
  variable
    Γ Δ     : Ctx
    is ip iq : IS

------------------------------------------------------------------------
-- Renaming

Ren : Ctx → Ctx → Set
Ren Γ Δ = ∀ {is} → is ∈ Γ → is ∈ Δ

ext : Ren Γ Δ → Ren (Γ ▹ ip) (Δ ▹ ip)
ext ρ (var# zero refl)  = v₀
ext ρ (var# (suc n) p) = vₛ (ρ (var# n p))

ren : Ren Γ Δ → E Γ is → E Δ is
ren ρ (var x)                   = var (ρ x)
ren ρ zero                      = zero
ren ρ one                       = one
ren ρ (imaps e)                 = imaps (ren (ext ρ) e)
ren ρ (sels e i)                = sels (ren ρ e) (ren ρ i)
ren ρ (imap e)                  = imap (ren (ext ρ) e)
ren ρ (sel e i)                 = sel (ren ρ e) (ren ρ i)
ren ρ (imapb m e)               = imapb m (ren (ext ρ) e)
ren ρ (selb m e i)              = selb m (ren ρ e) (ren ρ i)
ren ρ (sum e)                   = sum (ren (ext ρ) e)
ren ρ (zero-but i j e)          = zero-but (ren ρ i) (ren ρ j) (ren ρ e)
ren ρ (slide i sp e su)         = slide (ren ρ i) sp (ren ρ e) su
ren ρ (backslide i e su sp)     = backslide (ren ρ i) (ren ρ e) su sp
ren ρ (un f e)                  = un f (ren ρ e)
ren ρ (bin op e e₁)             = bin op (ren ρ e) (ren ρ e₁)
ren ρ (scaledown n e)           = scaledown n (ren ρ e)
ren ρ (minus e)                 = minus (ren ρ e)
ren ρ (ix-const i)              = ix-const i
ren ρ (div m i)                 = div m (ren ρ i)
ren ρ (mod m i)                 = mod m (ren ρ i)
ren ρ (ix-plus i j su sp)       = ix-plus (ren ρ i) (ren ρ j) su sp
ren ρ (argmax w e)              = argmax w (ren (ext ρ) e)
ren ρ (ix-minus i j sp su e)    = ix-minus (ren ρ i) (ren ρ j) sp su (ren (ext ρ) e)
ren ρ (ix-minusᵣ i j sp su e)   = ix-minusᵣ (ren ρ i) (ren ρ j) sp su (ren (ext ρ) e)

-- Weakening by one and two fresh innermost variables.
infix 9 ↑_ ↑↑_

↑_ : E Γ is → E (Γ ▹ ip) is
↑_ = ren vₛ

↑↑_ : E Γ is → E (Γ ▹ ip ▹ iq) is
↑↑ e = ↑ ↑ e

------------------------------------------------------------------------
-- The context without a variable, and weakening into the full context

infixl 5 _/_

_/_ : (Γ : Ctx) → is ∈ Γ → Ctx
(Γ ▹ _)  / var# zero refl  = Γ
(Γ ▹ ip) / var# (suc n) p = (Γ / var# n p) ▹ ip

wkv : (v : is ∈ Γ) → Ren (Γ / v) Γ
wkv {Γ = _ ▹ _} (var# zero refl)  y                  = vₛ y
wkv {Γ = _ ▹ _} (var# (suc n) p) (var# zero refl)  = v₀
wkv {Γ = _ ▹ _} (var# (suc n) p) (var# (suc m) q) = vₛ (wkv (var# n p) (var# m q))

wk : (v : is ∈ Γ) → E (Γ / v) ip → E Γ ip
wk v = ren (wkv v)

------------------------------------------------------------------------
-- Equality of variables, decided

data Eq {Γ : Ctx} : is ∈ Γ → ip ∈ Γ → Set where
  eq  : {x : is ∈ Γ} → Eq x x
  neq : (x : is ∈ Γ) (y : ip ∈ Γ / x) → Eq x (wkv x y)

-- (Under a shared outer variable the answer is the inner one's.)
eq-vₛ : {x : is ∈ Γ} {y : ip ∈ Γ} → Eq x y → Eq (vₛ {ip = iq} x) (vₛ y)
eq-vₛ eq        = eq
eq-vₛ (neq x y) = neq (vₛ x) (vₛ y)

eq? : (x : is ∈ Γ) (y : ip ∈ Γ) → Eq x y
eq? {Γ = _ ▹ _} (var# zero refl)  (var# zero refl)  = eq
eq? {Γ = _ ▹ _} (var# zero refl)  (var# (suc m) q) = neq v₀ (var# m q)
eq? {Γ = _ ▹ _} (var# (suc n) p) (var# zero refl)  = neq (var# (suc n) p) v₀
eq? {Γ = _ ▹ _} (var# (suc n) p) (var# (suc m) q) = eq-vₛ (eq? (var# n p) (var# m q))

------------------------------------------------------------------------
-- Substitution

Sub : Ctx → Ctx → Set
Sub Γ Δ = ∀ {is} → is ∈ Γ → E Δ is

exts : Sub Γ Δ → Sub (Γ ▹ ip) (Δ ▹ ip)
exts σ (var# zero refl)  = var v₀
exts σ (var# (suc n) p) = ↑ σ (var# n p)

subst : Sub Γ Δ → E Γ is → E Δ is
subst σ (var x)                 = σ x
subst σ zero                    = zero
subst σ one                     = one
subst σ (imaps e)               = imaps (subst (exts σ) e)
subst σ (sels e i)              = sels (subst σ e) (subst σ i)
subst σ (imap e)                = imap (subst (exts σ) e)
subst σ (sel e i)               = sel (subst σ e) (subst σ i)
subst σ (imapb m e)             = imapb m (subst (exts σ) e)
subst σ (selb m e i)            = selb m (subst σ e) (subst σ i)
subst σ (sum e)                 = sum (subst (exts σ) e)
subst σ (zero-but i j e)        = zero-but (subst σ i) (subst σ j) (subst σ e)
subst σ (slide i sp e su)       = slide (subst σ i) sp (subst σ e) su
subst σ (backslide i e su sp)   = backslide (subst σ i) (subst σ e) su sp
subst σ (un f e)                = un f (subst σ e)
subst σ (bin op e e₁)           = bin op (subst σ e) (subst σ e₁)
subst σ (scaledown n e)         = scaledown n (subst σ e)
subst σ (minus e)               = minus (subst σ e)
subst σ (ix-const i)            = ix-const i
subst σ (div m i)               = div m (subst σ i)
subst σ (mod m i)               = mod m (subst σ i)
subst σ (ix-plus i j su sp)     = ix-plus (subst σ i) (subst σ j) su sp
subst σ (argmax w e)            = argmax w (subst (exts σ) e)
subst σ (ix-minus i j sp su e)  = ix-minus (subst σ i) (subst σ j) sp su (subst (exts σ) e)
subst σ (ix-minusᵣ i j sp su e) = ix-minusᵣ (subst σ i) (subst σ j) sp su (subst (exts σ) e)

-- The substitution that replaces v by e₁ and renames the others into Γ / v.
sub-var : (v : is ∈ Γ) → E (Γ / v) is → Sub Γ (Γ / v)
sub-var v e₁ x with eq? v x
... | eq      = e₁
... | neq _ y = var y

-- `sub v e e₁`: e with v replaced by e₁.
sub : (v : is ∈ Γ) → E Γ ip → E (Γ / v) is → E (Γ / v) ip
sub v e e₁ = subst (sub-var v e₁) e

------------------------------------------------------------------------
-- Swapping a variable with the next one inwards

SwapAt : (Γ : Ctx) → is ∈ Γ → Ctx
SwapAt (Γ ▹ is)      (var# zero refl)         = Γ ▹ is
SwapAt (Γ ▹ ip ▹ is) (var# (suc zero) refl)    = Γ ▹ is ▹ ip
SwapAt (Γ ▹ ip ▹ is) (var# (suc (suc n)) p) = SwapAt (Γ ▹ ip) (var# (suc n) p) ▹ is

swapv : (x : is ∈ Γ) → Ren Γ (SwapAt Γ x)
swapv {Γ = _ ▹ _} (var# zero refl) y = y
swapv {Γ = _ ▹ _ ▹ _} (var# (suc zero) refl) (var# zero refl)       = v₁
swapv {Γ = _ ▹ _ ▹ _} (var# (suc zero) refl) (var# (suc zero) refl) = v₀
swapv {Γ = _ ▹ _ ▹ _} (var# (suc zero) refl) (var# (suc (suc m)) q) = var# (suc (suc m)) q
swapv {Γ = _ ▹ _ ▹ _} (var# (suc (suc n)) p) (var# zero refl)       = v₀
swapv {Γ = _ ▹ _ ▹ _} (var# (suc (suc n)) p) (var# (suc m) q)      = vₛ (swapv (var# (suc n) p) (var# m q))

ctx-swap : (x : is ∈ Γ) → E Γ ip → E (SwapAt Γ x) ip
ctx-swap x = ren (swapv x)

------------------------------------------------------------------------
-- Strengthening of index expressions: an index expression over Γ that
-- does not mention v, seen over Γ / v.  (Index expressions are built
-- from var, ix-const, div, mod and ix-plus; an argmax, whose body is
-- an array expression, is not strengthened: `nothing`, which only
-- keeps the optimiser's sum rules from firing.)

str : ∀ {s} (v : is ∈ Γ) → E Γ (ix s) → Maybe (E (Γ / v) (ix s))
str v (var x) with eq? v x
... | eq      = nothing
... | neq _ y = just (var y)
str v (ix-const i)        = just (ix-const i)
str v (div m i)           = str v i >>= λ i′ → just (div m i′)
str v (mod m i)           = str v i >>= λ i′ → just (mod m i′)
str v (ix-plus i j su sp) = str v i >>= λ i′ → str v j >>= λ j′ → just (ix-plus i′ j′ su sp)
str v (argmax _ _)        = nothing

------------------------------------------------------------------------
-- Examples

private
  open import Spec.Array.Base using (ι; unit)
  open import Relation.Binary.PropositionalEquality using (_≡_; refl)

  C : Ctx
  C = ε ▹ ar (ι 5) ▹ ix (ι 5)

  -- in C ▹ ix 5, replace the inner index by the outer one
  _ : sub {Γ = C ▹ ix (ι 5)} v₀ (sels (var v₂) (var v₀)) (var v₀) ≡ sels (var v₁) (var v₀)
  _ = refl

  _ : ctx-swap {Γ = C ▹ ix (ι 3)} v₁ (var v₁) ≡ var v₀
  _ = refl

  _ : str {Γ = C} v₀ (var v₀) ≡ nothing
  _ = refl
