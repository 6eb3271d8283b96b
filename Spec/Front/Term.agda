{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- The core of the model language: E without its shape witnesses.
--
-- A term `Tm` is what a model binding means once names are resolved
-- (de Bruijn indices, as in E) and layers are expanded into the core
-- operations.  It has one constructor per operation of E, except that
-- the pairs E tells apart by shape alone share one here:
--   For   — imaps (scalar body) and imap (array body),
--   Sel   — sels (index of the whole shape) and sel (of the outer part),
--   Add   — bin plus on arrays and ix-plus on positions.
-- A binder carries the shape of its index as written (or as a layer
-- computed it); every other shape is inferred by Spec.Front.Check.
--
-- `⌊_⌋` erases an expression of E to its term: Spec.Theorems states
-- that elaboration is faithful, i.e. the elaborated expression erases
-- back to the term it was elaborated from.
------------------------------------------------------------------------
module Spec.Front.Term where

open import Data.Nat using (ℕ; zero; suc; _+_; _<ᵇ_)
open import Data.Bool using (if_then_else_)
open import Data.String using (String)

open import Spec.Array.Base using (S; P)
open import Spec.Lang.Syntax hiding (Sum)

private
  variable
    Γ  : Ctx
    is : IS

------------------------------------------------------------------------
-- Terms

data Tm : Set where
  V                   : ℕ → Tm
  Zero One            : Tm
  For Sum Tile        : S → Tm → Tm        -- binders (the index is V 0 in the body)
  Sel Block           : Tm → Tm → Tm       -- array, index
  ZeroBut             : Tm → Tm → Tm → Tm
  Slide Backslide     : Tm → Tm → Tm       -- index, array
  Un                  : Fn → Tm → Tm       -- an elementwise function (logistic, exp, ...)
  Neg                 : Tm → Tm
  Add Mul Max         : Tm → Tm → Tm     -- Max: max(a, b), elementwise
  Scale               : ℕ → Tm → Tm
  Div Mod             : S → Tm → Tm        -- block shape, index
  Const               : (s : S) → P s → Tm -- a constant position of shape s
  IxMinus IxMinusʳ    : Tm → Tm → Tm → Tm  -- i, j, body (binds the difference)
  Argmax              : S → Tm → Tm        -- the first position where the body is largest

pattern Logistic a = Un Fn.logistic a

-- The maximum of a scalar body over the positions of s: the body at its
-- argmax (what `max i : s . t` and the max layers expand to; E's maxs).
MaxOver : S → Tm → Tm
MaxOver s t = Sel (For s t) (Argmax s t)

------------------------------------------------------------------------
-- Erasure

var-index : is ∈ Γ → ℕ
var-index = idx

⌊_⌋ : E Γ is → Tm
⌊ var x ⌋                         = V (var-index x)
⌊ zero ⌋                          = Zero
⌊ one ⌋                           = One
⌊ imaps {s = s} e ⌋               = For s ⌊ e ⌋
⌊ sels a i ⌋                      = Sel ⌊ a ⌋ ⌊ i ⌋
⌊ imap {s = s} e ⌋                = For s ⌊ e ⌋
⌊ sel a i ⌋                       = Sel ⌊ a ⌋ ⌊ i ⌋
⌊ imapb {s = s} _ e ⌋             = Tile s ⌊ e ⌋
⌊ selb _ a i ⌋                    = Block ⌊ a ⌋ ⌊ i ⌋
⌊ sum {s = s} e ⌋                 = Sum s ⌊ e ⌋
⌊ zero-but i j a ⌋                = ZeroBut ⌊ i ⌋ ⌊ j ⌋ ⌊ a ⌋
⌊ slide i _ a _ ⌋                 = Slide ⌊ i ⌋ ⌊ a ⌋
⌊ backslide i a _ _ ⌋             = Backslide ⌊ i ⌋ ⌊ a ⌋
⌊ un f a ⌋                        = Un f ⌊ a ⌋
⌊ bin plus a b ⌋                  = Add ⌊ a ⌋ ⌊ b ⌋
⌊ bin mul a b ⌋                   = Mul ⌊ a ⌋ ⌊ b ⌋
⌊ bin max a b ⌋                   = Max ⌊ a ⌋ ⌊ b ⌋
⌊ scaledown n a ⌋                 = Scale n ⌊ a ⌋
⌊ minus a ⌋                       = Neg ⌊ a ⌋
⌊ ix-const {s = s} i ⌋            = Const s i
⌊ div {p = p} _ i ⌋               = Div p ⌊ i ⌋
⌊ mod {p = p} _ i ⌋               = Mod p ⌊ i ⌋
⌊ ix-plus i j _ _ ⌋               = Add ⌊ i ⌋ ⌊ j ⌋
⌊ ix-minus i j _ _ e ⌋            = IxMinus ⌊ i ⌋ ⌊ j ⌋ ⌊ e ⌋
⌊ ix-minusᵣ i j _ _ e ⌋           = IxMinusʳ ⌊ i ⌋ ⌊ j ⌋ ⌊ e ⌋
⌊ argmax {s = s} _ e ⌋            = Argmax s ⌊ e ⌋

------------------------------------------------------------------------
-- Shifting: `shift c k t` adds k to every variable of t at or above c
-- (a term moved under k new binders has c = 0).

shift : ℕ → ℕ → Tm → Tm
shift c k (V n)              = V (if n <ᵇ c then n else n + k)
shift c k Zero               = Zero
shift c k One                = One
shift c k (For s t)          = For s (shift (suc c) k t)
shift c k (Sum s t)          = Sum s (shift (suc c) k t)
shift c k (Tile s t)         = Tile s (shift (suc c) k t)
shift c k (Sel a i)          = Sel (shift c k a) (shift c k i)
shift c k (Block a i)        = Block (shift c k a) (shift c k i)
shift c k (ZeroBut i j a)    = ZeroBut (shift c k i) (shift c k j) (shift c k a)
shift c k (Slide i a)        = Slide (shift c k i) (shift c k a)
shift c k (Backslide i a)    = Backslide (shift c k i) (shift c k a)
shift c k (Un f a)           = Un f (shift c k a)
shift c k (Neg a)            = Neg (shift c k a)
shift c k (Add a b)          = Add (shift c k a) (shift c k b)
shift c k (Mul a b)          = Mul (shift c k a) (shift c k b)
shift c k (Max a b)          = Max (shift c k a) (shift c k b)
shift c k (Scale n a)        = Scale n (shift c k a)
shift c k (Const s i)        = Const s i
shift c k (Div p i)          = Div p (shift c k i)
shift c k (Mod p i)          = Mod p (shift c k i)
shift c k (IxMinus i j t)    = IxMinus (shift c k i) (shift c k j) (shift (suc c) k t)
shift c k (IxMinusʳ i j t)   = IxMinusʳ (shift c k i) (shift c k j) (shift (suc c) k t)
shift c k (Argmax s t)       = Argmax s (shift (suc c) k t)

-- A term moved under k binders.
↑[_]_ : ℕ → Tm → Tm
↑[ k ] t = shift 0 k t
