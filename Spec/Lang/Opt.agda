{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- The optimiser: one bottom-up rewriting pass `opt` (paper §6.1 and
-- §7.1.1) and its iteration `opt*`.
--
-- Every rule is an equation of the semantics (opt-sound, proved in
-- Spec.Proofs.Opt for scalars with Spec.Scalar.Laws); together
-- they remove the array temporaries that reverse mode introduces:
--
--   η: imapb, slide and backslide become scalar maps (imaps) over
--     index arithmetic (div/mod, ix-plus, ix-minus), so no blocked or
--     windowed array is ever built;
--   β: a selection from a map is its body at the index (sels/imaps,
--     sel/imap; with η this gives the paper's §7.1.1 rules for
--     sels into imapb, slide and backslide);
--   selections (sels/sel/selb) go through linear and pointwise
--     operations (bin, sum, zero-but, minus, scaledown, un f,
--     ix-minus, ix-minusᵣ);
--   sums go under maps (ctx-swap), split over ⊞ and minus, and a sum
--     of a zero-but whose condition pins the summation index collapses
--     to one term (sub) or to an index subtraction (ix-minus,
--     ix-minusᵣ);
--   scaledown goes under a sum; products move conditionals and scalar
--     maps outwards;
--   constant folding with zero and one.
--
-- Each pass only looks at the results of optimising the children, so
-- a rewrite that creates a new redex is finished by the next pass:
-- opt* iterates until a pass changes nothing (or the fuel runs out).
------------------------------------------------------------------------
module Spec.Lang.Opt where

open import Data.Bool using (Bool; true; false; _∧_; if_then_else_)
open import Data.Fin as F using ()
open import Data.Maybe using (Maybe; just; nothing)
open import Data.Nat as ℕ using (ℕ; suc)

open import Spec.Array.Base using (S; P; ι; _⊗_; unit; _+_≈_; suc_≈_; _*_≈_)
open import Spec.Lang.Syntax
open import Spec.Lang.Subst

private
  variable
    Γ               : Ctx
    is ip           : IS
    s s′ p q r t u  : S

------------------------------------------------------------------------
-- Sums of conditionals.  The summation index is v₀ of Γ ▹ ix s; `fb`
-- is the unoptimised result to fall back on.

private
  -- Σ_t [i = t ⊕ k] a  =  ix-minusᵣ i k a   (t is v₀; i, k do not mention it)
  plusᵣ : E Γ (ix r) → E (Γ ▹ ix s) (ix s′) → E (Γ ▹ ix s) (ix u)
        → suc p ≈ u → s′ + p ≈ r → E (Γ ▹ ix s) (ar q) → E Γ (ar q) → E Γ (ar q)
  plusᵣ i (var j) k su sp a fb with eq? v₀ j
  ... | neq _ _ = fb
  ... | eq with str v₀ k
  ...   | just k′ = ix-minusᵣ i k′ sp su a
  ...   | nothing = fb
  plusᵣ i j k su sp a fb = fb

  -- Σ_t [i = j ⊕ t] a  =  ix-minus i j a    (t is v₀; i, j do not mention it)
  plusₗ : E Γ (ix r) → E (Γ ▹ ix s) (ix s′) → E (Γ ▹ ix s) (ix u)
       → suc p ≈ u → s′ + p ≈ r → E (Γ ▹ ix s) (ar q) → E Γ (ar q) → E Γ (ar q)
  plusₗ i j (var k) su sp a fb with eq? v₀ k
  ... | neq _ _ = plusᵣ i j (var k) su sp a fb
  ... | eq with str v₀ j
  ...   | just j′ = ix-minus i j′ sp su a
  ...   | nothing = fb
  plusₗ i j k su sp a fb = plusᵣ i j k su sp a fb

  -- Σ_t [i = j] a, where i does not mention t and j does:
  -- Σ_t [i = t] a  =  a at i,  and the two cases above.
  pin : E Γ (ix t) → E (Γ ▹ ix s) (ix t) → E (Γ ▹ ix s) (ar p) → E Γ (ar p) → E Γ (ar p)
  pin i (var j) a fb with eq? v₀ j
  ... | eq      = sub v₀ a i
  ... | neq _ _ = fb
  pin i (ix-plus j k su sp) a fb = plusₗ i j k su sp a fb
  pin i j a fb = fb

  -- Σ_t [t = t] a  =  Σ_t a
  both : E (Γ ▹ ix s) (ix t) → E (Γ ▹ ix s) (ix t) → E (Γ ▹ ix s) (ar p) → E Γ (ar p) → E Γ (ar p)
  both (var i) (var j) a fb with eq? v₀ i
  ... | neq _ _ = fb
  ... | eq with str v₀ (var j)
  ...   | nothing = sum a
  ...   | just _  = fb
  both i j a fb = fb

-- `sum-zb i j a` is (an optimised) sum (zero-but i j a); a condition
-- that does not mention the summation index moves out of the sum.
sum-zb : E (Γ ▹ ix s) (ix t) → E (Γ ▹ ix s) (ix t) → E (Γ ▹ ix s) (ar p) → E Γ (ar p)
sum-zb i j a with str v₀ i | str v₀ j
... | just i′ | just j′ = zero-but i′ j′ (sum a)
... | just i′ | nothing = pin i′ j a (sum (zero-but i j a))
... | nothing | just j′ = pin j′ i a (sum (zero-but i j a))
... | nothing | nothing = both i j a (sum (zero-but i j a))

------------------------------------------------------------------------
-- Constant folding

plus-opt : E Γ (ar s) → E Γ (ar s) → E Γ (ar s)
plus-opt zero b    = b
plus-opt a    zero = a
plus-opt a    b    = a ⊞ b

-- (also moves conditionals out of, and scalar maps over, products)
mul-opt : E Γ (ar s) → E Γ (ar s) → E Γ (ar s)
mul-opt zero             _                = zero
mul-opt _                zero             = zero
mul-opt one              b                = b
mul-opt a                one              = a
mul-opt (zero-but i j a) b                = zero-but i j (a ⊠ b)
mul-opt a                (zero-but i j b) = zero-but i j (a ⊠ b)
mul-opt (imaps a)        b                = imaps (a ⊠ sels (↑ b) (var v₀))
mul-opt a                (imaps b)        = imaps (sels (↑ a) (var v₀) ⊠ b)
mul-opt a                b                = a ⊠ b

------------------------------------------------------------------------
-- One pass

opt : E Γ is → E Γ is
opt (var x) = var x
opt zero    = zero
opt one     = one

opt (imaps e) with opt e
... | zero = zero
... | e′   = imaps e′

opt (sels e i) with opt e | opt i
... | zero                  | _  = zero
... | one                   | _  = one
... | imaps a               | i′ = sub v₀ a i′
... | bin op a b            | i′ = bin op (sels a i′) (sels b i′)
... | sum a                 | i′ = sum (sels a (↑ i′))
... | zero-but j k a        | i′ = zero-but j k (sels a i′)
... | minus a               | i′ = minus (sels a i′)
... | scaledown n a         | i′ = scaledown n (sels a i′)
... | un f a                | i′ = un f (sels a i′)
... | ix-minus j k sp su a  | i′ = ix-minus j k sp su (sels a (↑ i′))
... | ix-minusᵣ j k sp su a | i′ = ix-minusᵣ j k sp su (sels a (↑ i′))
... | a                     | i′ = sels a i′

opt (imap e) with opt e
... | zero = zero
... | e′   = imap e′

opt (sel e i) with opt e | opt i
... | zero                  | _  = zero
... | one                   | _  = one
... | imap a                | i′ = sub v₀ a i′
... | bin op a b            | i′ = bin op (sel a i′) (sel b i′)
... | sum a                 | i′ = sum (sel a (↑ i′))
... | zero-but j k a        | i′ = zero-but j k (sel a i′)
... | minus a               | i′ = minus (sel a i′)
... | scaledown n a         | i′ = scaledown n (sel a i′)
... | un f a                | i′ = un f (sel a i′)
... | ix-minus j k sp su a  | i′ = ix-minus j k sp su (sel a (↑ i′))
... | ix-minusᵣ j k sp su a | i′ = ix-minusᵣ j k sp su (sel a (↑ i′))
... | a                     | i′ = sel a i′

-- η: a blocked map is a scalar map that picks block and element
opt (imapb m e) with opt e
... | zero = zero
... | e′   = imaps (sels (sub v₀ (ren (ext vₛ) e′) (div m (var v₀))) (mod m (var v₀)))

opt (selb m e i) with opt e | opt i
... | zero                  | _  = zero
... | one                   | _  = one
... | bin op a b            | i′ = bin op (selb m a i′) (selb m b i′)
... | sum a                 | i′ = sum (selb m a (↑ i′))
... | zero-but j k a        | i′ = zero-but j k (selb m a i′)
... | minus a               | i′ = minus (selb m a i′)
... | scaledown n a         | i′ = scaledown n (selb m a i′)
... | un f a                | i′ = un f (selb m a i′)
... | ix-minus j k sp su a  | i′ = ix-minus j k sp su (selb m a (↑ i′))
... | ix-minusᵣ j k sp su a | i′ = ix-minusᵣ j k sp su (selb m a (↑ i′))
... | a                     | i′ = selb m a i′

opt (sum e) with opt e
... | zero             = zero
... | imaps a          = imaps (sum (ctx-swap v₁ a))
... | imap a           = imap (sum (ctx-swap v₁ a))
... | a ⊞ b            = sum a ⊞ sum b
... | minus a          = minus (sum a)
... | zero-but i j a   = sum-zb i j a
... | a                = sum a

opt (zero-but i j e) with opt e
... | zero = zero
... | a    = zero-but (opt i) (opt j) a

-- η: windows become scalar maps over index arithmetic
opt (slide i sp e su) with opt i | opt e
... | _  | zero = zero
... | i′ | a    = imaps (sels (↑ a) (ix-plus (↑ i′) (var v₀) su sp))

opt (backslide i e su sp) with opt i | opt e
... | _  | zero = zero
... | i′ | a    = imaps (ix-minus (var v₀) (↑ i′) sp su (sels (↑↑ a) (var v₀)))

opt (un f e)     = un f (opt e)
opt (e ⊞ e₁)     = plus-opt (opt e) (opt e₁)
opt (e ⊠ e₁)     = mul-opt (opt e) (opt e₁)
opt (e ⊔ e₁)     = opt e ⊔ opt e₁

opt (scaledown n e) with opt e
... | zero  = zero
... | sum a = sum (scaledown n a)
... | a     = scaledown n a

opt (minus e) with opt e
... | zero    = zero
... | minus a = a
... | a       = minus a

opt (ix-const i)        = ix-const i
opt (div m i)           = div m (opt i)
opt (mod m i)           = mod m (opt i)
opt (ix-plus i j su sp) = ix-plus (opt i) (opt j) su sp
opt (argmax w e)        = argmax w (opt e)

opt (ix-minus i j sp su e) with opt e
... | zero = zero
... | a    = ix-minus (opt i) (opt j) sp su a

opt (ix-minusᵣ i j sp su e) with opt e
... | zero = zero
... | a    = ix-minusᵣ (opt i) (opt j) sp su a

------------------------------------------------------------------------
-- The optimisation goal: no node that builds a blocked or windowed
-- array (imapb, selb, slide, backslide), so that every node lowers to
-- scalar code over index arithmetic without a temporary.  A scalar
-- selection from a block (sels (selb m a i) k, the element a[i·p + k])
-- builds nothing.  (opt never returns imapb, slide or backslide at
-- all; selb only survives where the input had one.)

temp-free : E Γ is → Bool
temp-free (var _)                 = true
temp-free zero                    = true
temp-free one                     = true
temp-free (imaps e)               = temp-free e
temp-free (sels (selb _ a i) k)   = temp-free a ∧ temp-free i ∧ temp-free k
temp-free (sels e i)              = temp-free e ∧ temp-free i
temp-free (imap e)                = temp-free e
temp-free (sel e i)               = temp-free e ∧ temp-free i
temp-free (imapb _ _)             = false
temp-free (selb _ _ _)            = false
temp-free (sum e)                 = temp-free e
temp-free (zero-but i j e)        = temp-free i ∧ temp-free j ∧ temp-free e
temp-free (slide _ _ _ _)         = false
temp-free (backslide _ _ _ _)     = false
temp-free (un _ e)                = temp-free e
temp-free (bin _ e e₁)            = temp-free e ∧ temp-free e₁
temp-free (scaledown _ e)         = temp-free e
temp-free (minus e)               = temp-free e
temp-free (ix-const _)            = true
temp-free (div _ i)               = temp-free i
temp-free (mod _ i)               = temp-free i
temp-free (ix-plus i j _ _)       = temp-free i ∧ temp-free j
temp-free (argmax _ e)            = temp-free e
temp-free (ix-minus i j _ _ e)    = temp-free i ∧ temp-free j ∧ temp-free e
temp-free (ix-minusᵣ i j _ _ e)   = temp-free i ∧ temp-free j ∧ temp-free e

------------------------------------------------------------------------
-- Iteration

-- Structural equality of expressions (constructors, variables, scalar
-- parameters; shapes are not compared).  Only used to stop opt*
-- early: soundness of opt* does not depend on it.
same : ∀ {Γ Δ is ip} → E Γ is → E Δ ip → Bool
same-var : ∀ {Γ Δ is ip} → is ∈ Γ → ip ∈ Δ → Bool
same-var x y = idx x ℕ.≡ᵇ idx y

-- positions of possibly different shapes: the same tree and leaves
same-pos : ∀ {s s′} → P s → P s′ → Bool
same-pos (ι i)   (ι i′)    = F.toℕ i ℕ.≡ᵇ F.toℕ i′
same-pos (i ⊗ j) (i′ ⊗ j′) = same-pos i i′ ∧ same-pos j j′
same-pos _       _         = false

same-op : Bop → Bop → Bool
same-op plus plus = true
same-op mul  mul  = true
same-op max  max  = true
same-op _    _    = false

same-fn : Fn → Fn → Bool
same-fn Fn.logistic Fn.logistic = true
same-fn Fn.exp      Fn.exp      = true
same-fn Fn.log      Fn.log      = true
same-fn Fn.recip    Fn.recip    = true
same-fn Fn.sqrt     Fn.sqrt     = true
same-fn Fn.relu     Fn.relu     = true
same-fn Fn.step     Fn.step     = true
same-fn Fn.detach   Fn.detach   = true
same-fn Fn.erf      Fn.erf      = true
same-fn Fn.derf     Fn.derf     = true
same-fn _           _           = false

same (var x)                 (var y)                    = same-var x y
same zero                    zero                       = true
same one                     one                        = true
same (imaps e)               (imaps e′)                 = same e e′
same (sels e i)              (sels e′ i′)               = same e e′ ∧ same i i′
same (imap e)                (imap e′)                  = same e e′
same (sel e i)               (sel e′ i′)                = same e e′ ∧ same i i′
same (imapb _ e)             (imapb _ e′)               = same e e′
same (selb _ e i)            (selb _ e′ i′)             = same e e′ ∧ same i i′
same (sum e)                 (sum e′)                   = same e e′
same (zero-but i j e)        (zero-but i′ j′ e′)        = same i i′ ∧ same j j′ ∧ same e e′
same (slide i _ e _)         (slide i′ _ e′ _)          = same i i′ ∧ same e e′
same (backslide i e _ _)     (backslide i′ e′ _ _)      = same i i′ ∧ same e e′
same (un f e)                (un f′ e′)                 = same-fn f f′ ∧ same e e′
same (bin op e e₁)           (bin op′ e′ e₁′)           = same-op op op′ ∧ same e e′ ∧ same e₁ e₁′
same (scaledown n e)         (scaledown n′ e′)          = (n ℕ.≡ᵇ n′) ∧ same e e′
same (minus e)               (minus e′)                 = same e e′
same (ix-const i)            (ix-const i′)              = same-pos i i′
same (div _ i)               (div _ i′)                 = same i i′
same (mod _ i)               (mod _ i′)                 = same i i′
same (ix-plus i j _ _)       (ix-plus i′ j′ _ _)        = same i i′ ∧ same j j′
same (argmax _ e)            (argmax _ e′)              = same e e′
same (ix-minus i j _ _ e)    (ix-minus i′ j′ _ _ e′)    = same i i′ ∧ same j j′ ∧ same e e′
same (ix-minusᵣ i j _ _ e)   (ix-minusᵣ i′ j′ _ _ e′)   = same i i′ ∧ same j j′ ∧ same e e′
same _                       _                          = false

-- At most n passes of opt, stopping at the first pass that changes nothing.
opt* : ℕ → E Γ is → E Γ is
opt* ℕ.zero  e = e
opt* (suc n) e with opt e
... | e′ = if same e e′ then e else opt* n e′

-- The fuel used by the dump: enough for every model of the project
-- (each pass finishes the redexes created by the previous one).
default-fuel : ℕ
default-fuel = 20

optimise : E Γ is → E Γ is
optimise = opt* default-fuel
