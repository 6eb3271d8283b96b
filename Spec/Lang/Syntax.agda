{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- The embedded array language E (paper §5, §7.1).
--
-- Contexts are snoc-lists of sorted shapes: `ix s` for a position of
-- shape s, `ar s` for an array of shape s.  Variables are de Bruijn
-- indices (v₀ is the innermost).  E Γ is is the type of expressions of
-- sort and shape `is` over Γ; it is intrinsically shaped, and no
-- computation happens in its indices, so every function on E (eval,
-- renaming, AD, the optimiser, the dump printer) is a plain fold that
-- pattern-matches on constructors.
--
-- The constructors are exactly the nodes of docs/dump-format.md §4
-- (op names with `_` for `-`: ix-const is "ix_const"; ix-minusᵣ is
-- "ix_minus_r").  An index expression (sort ix) is a variable, a
-- constant position (ix-const), index arithmetic on them, or the
-- position where a scalar body is largest (argmax, the max-reduction).
-- `un f a` applies the elementwise function f (Spec.Scalar.Fn:
-- logistic, exp, log, recip, sqrt, relu, step, detach) to every element; its dump
-- op is the function's name ("logistic", "exp", ...), and `logistic a`
-- is a pattern for `un Fn.logistic a`.
------------------------------------------------------------------------
module Spec.Lang.Syntax where

open import Data.List using (List; []; _∷_)
open import Data.Maybe using (Maybe; just; nothing)
open import Data.Nat using (ℕ; zero; suc)
open import Relation.Binary.PropositionalEquality using (_≡_; refl)
open import Data.String using (String)

open import Spec.Array.Base using (S; P; ι; _⊗_; unit; _+_≈_; suc_≈_; _*_≈_)
open import Spec.Scalar public using (Fn)

------------------------------------------------------------------------
-- Sorts, contexts, variables

data IS : Set where
  ix : S → IS        -- a position of the shape
  ar : S → IS        -- an array of the shape

infixl 5 _▹_

data Ctx : Set where
  ε   : Ctx
  _▹_ : Ctx → IS → Ctx

-- The sort at a de Bruijn index (0 is the innermost variable), if the
-- context is that long.
infix 9 _‼_

_‼_ : Ctx → ℕ → Maybe IS
ε        ‼ _     = nothing
(Γ ▹ is) ‼ zero  = just is
(Γ ▹ _)  ‼ suc n = Γ ‼ n

-- A variable is its de Bruijn index and the evidence that the context
-- has the variable's sort there.  The evidence is an equation, which
-- the compiled program does not carry (Agda erases proofs of _≡_), so a
-- variable is a number at run time: weakening it (vₛ) adds one to the
-- index, in constant time and space, wherever the variable is.  (A
-- unary variable vₛ (vₛ … v₀) would cost its index in cells: a model of
-- n bindings has Θ(n²) of them in its full scope.)  `v₀`, …, `v₉` are
-- patterns of the record; a function that recurses on a variable
-- recurses on its index (`var# (suc n) p` is `vₛ (var# n p)`).
infix 4 _∈_

record _∈_ (is : IS) (Γ : Ctx) : Set where
  constructor var#
  field
    idx : ℕ
    at  : Γ ‼ idx ≡ just is

open _∈_ public using (idx)

-- weakening by one: the same variable, one binder further out
vₛ : ∀ {Γ is ip} → is ∈ Γ → is ∈ Γ ▹ ip
vₛ (var# n p) = var# (suc n) p

pattern v₀ = var# 0 refl
pattern v₁ = var# 1 refl
pattern v₂ = var# 2 refl
pattern v₃ = var# 3 refl
pattern v₄ = var# 4 refl
pattern v₅ = var# 5 refl
pattern v₆ = var# 6 refl
pattern v₇ = var# 7 refl
pattern v₈ = var# 8 refl
pattern v₉ = var# 9 refl

-- The binary scalar operations, applied elementwise: sum, product and
-- maximum (Scalar's max; its declared derivative is in
-- Spec.Proofs.Forward).
data Bop : Set where
  plus mul max : Bop

private
  variable
    Γ         : Ctx
    is        : IS
    s p q r u : S

------------------------------------------------------------------------
-- Expressions

data E : Ctx → IS → Set where
  var       : is ∈ Γ → E Γ is
  zero one  : E Γ (ar s)
  -- scalar (unit-shaped) maps and selections
  imaps     : E (Γ ▹ ix s) (ar unit) → E Γ (ar s)
  sels      : E Γ (ar s) → E Γ (ix s) → E Γ (ar unit)
  -- maps and selections over the outer part of a product shape
  imap      : E (Γ ▹ ix s) (ar p) → E Γ (ar (s ⊗ p))
  sel       : E Γ (ar (s ⊗ p)) → E Γ (ix s) → E Γ (ar p)
  -- maps and selections over blocks (q is s-many blocks of shape p)
  imapb     : s * p ≈ q → E (Γ ▹ ix s) (ar p) → E Γ (ar q)
  selb      : s * p ≈ q → E Γ (ar q) → E Γ (ix s) → E Γ (ar p)
  -- summation over all positions of s
  sum       : E (Γ ▹ ix s) (ar p) → E Γ (ar p)
  -- `zero-but i j a` is a where i = j and zero elsewhere
  zero-but  : E Γ (ix s) → E Γ (ix s) → E Γ (ar p) → E Γ (ar p)
  slide     : E Γ (ix s) → s + p ≈ r → E Γ (ar r) → suc p ≈ u → E Γ (ar u)
  backslide : E Γ (ix s) → E Γ (ar u) → suc p ≈ u → s + p ≈ r → E Γ (ar r)
  -- elementwise arithmetic
  un        : Fn → E Γ (ar s) → E Γ (ar s)   -- an elementwise function
  bin       : Bop → E Γ (ar s) → E Γ (ar s) → E Γ (ar s)
  scaledown : ℕ → E Γ (ar s) → E Γ (ar s)
  minus     : E Γ (ar s) → E Γ (ar s)
  -- index arithmetic (§7.1)
  ix-const  : P s → E Γ (ix s)       -- the given position (a constant)
  div       : s * p ≈ q → E Γ (ix q) → E Γ (ix s)
  mod       : s * p ≈ q → E Γ (ix q) → E Γ (ix p)
  ix-plus   : E Γ (ix s) → E Γ (ix u) → suc p ≈ u → s + p ≈ r → E Γ (ix r)
  -- the max-reduction: the first position of s (row-major) where the
  -- scalar body is largest (s non-empty: suc p ≈ s); the maximum
  -- itself is the body there, sels (imaps e) (argmax w e)
  argmax    : suc p ≈ s → E (Γ ▹ ix s) (ar unit) → E Γ (ix s)
  -- `ix-minus i j sp su e`: e at the k with j ⊕ k = i if there is one,
  -- zero otherwise (e binds k : ix u)
  ix-minus  : E Γ (ix r) → E Γ (ix s) → s + p ≈ r → suc p ≈ u
            → E (Γ ▹ ix u) (ar q) → E Γ (ar q)
  -- `ix-minusᵣ i j sp su e`: e at the k with k ⊕ j = i if there is one,
  -- zero otherwise (e binds k : ix s)
  ix-minusᵣ : E Γ (ix r) → E Γ (ix u) → s + p ≈ r → suc p ≈ u
            → E (Γ ▹ ix s) (ar q) → E Γ (ar q)

infixl 6 _⊞_
infixl 7 _⊠_
infixl 6 _⊔_

pattern _⊞_ a b = bin plus a b
pattern _⊠_ a b = bin mul a b
pattern _⊔_ a b = bin max a b

-- the logistic function (the only elementwise function of the paper)
pattern logistic a = un Fn.logistic a

-- The name of an elementwise function: its op in the dump and its call
-- in the model language (`exp(e)`).
fn-name : Fn → String
fn-name Fn.logistic = "logistic"
fn-name Fn.exp      = "exp"
fn-name Fn.log      = "log"
fn-name Fn.recip    = "recip"
fn-name Fn.sqrt     = "sqrt"
fn-name Fn.relu     = "relu"
fn-name Fn.step     = "step"
fn-name Fn.detach   = "detach"
fn-name Fn.erf      = "erf"
fn-name Fn.derf     = "derf"

-- all of them
fns : List Fn
fns = Fn.logistic ∷ Fn.exp ∷ Fn.log ∷ Fn.recip ∷ Fn.sqrt ∷ Fn.relu ∷ Fn.step ∷ Fn.detach ∷ Fn.erf
    ∷ Fn.derf ∷ []

------------------------------------------------------------------------
-- Binders as Agda functions: the argument stands for the new index
-- variable v₀ (expressions from outside must be weakened with ↑ of
-- Spec.Lang.Subst).

Imapₛ : (E (Γ ▹ ix s) (ix s) → E (Γ ▹ ix s) (ar unit)) → E Γ (ar s)
Imapₛ f = imaps (f (var v₀))

Imap : (E (Γ ▹ ix s) (ix s) → E (Γ ▹ ix s) (ar p)) → E Γ (ar (s ⊗ p))
Imap f = imap (f (var v₀))

Sum : (E (Γ ▹ ix s) (ix s) → E (Γ ▹ ix s) (ar p)) → E Γ (ar p)
Sum f = sum (f (var v₀))

-- the maximum of a scalar body over the positions of s: the body at
-- its argmax (the optimiser substitutes the argmax into the body)
maxs : suc p ≈ s → E (Γ ▹ ix s) (ar unit) → E Γ (ar unit)
maxs w e = sels (imaps e) (argmax w e)

------------------------------------------------------------------------
-- Examples

_ : Ctx
_ = ε ▹ ar (ι 5) ▹ ar (ι 5)

-- the sum of all elements of a 5-vector (in a context holding it)
_ : E (ε ▹ ar (ι 5)) (ar unit)
_ = Sum λ i → sels (var v₁) i
