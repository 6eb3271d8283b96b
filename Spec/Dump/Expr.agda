{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- Expressions of E as JSON, exactly as docs/dump-format.md §4 writes
-- them.
--
-- Every node is an object with "op", "sort" and "shape" (read off the
-- node's index), then the node's children and parameters as named
-- fields.  Variables are printed as de Bruijn indices (v₀ is 0).  A
-- shape relation is never printed: a node that carries one prints the
-- two shapes s and p it relates, from which a consumer recomputes the
-- third (s + p ≈ r, suc p ≈ u, s * p ≈ q).  Because E is intrinsically
-- shaped, the printer is a plain fold and needs no shape inference.
------------------------------------------------------------------------
module Spec.Dump.Expr where

open import Data.Fin as F using ()
open import Data.List using (List; []; _∷_)
open import Data.Nat using (ℕ; suc)
open import Data.Product using (_×_; _,_)
open import Data.String using (String)
open import Relation.Binary.PropositionalEquality using (_≡_; refl)

open import Spec.Array.Base using (S; P; ι; _⊗_; unit; _+_≈_; suc_≈_; _*_≈_)
open import Spec.Lang.Syntax
open import Spec.Dump.JSON

private
  variable
    Γ         : Ctx
    is        : IS
    s p q r u : S

------------------------------------------------------------------------
-- Shapes, positions, sorts, variables

shape : S → JSON
shape (ι n)   = nat n
shape (s ⊗ p) = array (shape s ∷ shape p ∷ [])

_ : shape (ι 6 ⊗ (ι 5 ⊗ ι 5)) ≡ array (nat 6 ∷ array (nat 5 ∷ nat 5 ∷ []) ∷ [])
_ = refl

-- A position has the tree of its shape, with each leaf's number.
pos : ∀ {s} → P s → JSON
pos (ι i)   = nat (F.toℕ i)
pos (i ⊗ j) = array (pos i ∷ pos j ∷ [])

sortName : IS → String
sortName (ix _) = "ix"
sortName (ar _) = "ar"

shapeOf : IS → S
shapeOf (ix s) = s
shapeOf (ar s) = s

-- The de Bruijn index of a variable.
index : is ∈ Γ → ℕ
index = idx

------------------------------------------------------------------------
-- The shapes a relation relates (its first two indices)

+-shapes : s + p ≈ r → S × S
+-shapes {s = s} {p = p} _ = s , p

*-shapes : s * p ≈ q → S × S
*-shapes {s = s} {p = p} _ = s , p

-- The shape bound by a binder's body.
bound : E (Γ ▹ ix s) is → S
bound {s = s} _ = s

------------------------------------------------------------------------
-- Printing

private
  -- The three fields every node starts with, then the node's own.
  node : String → IS → List (String × JSON) → JSON
  node op is fields =
    object (("op" , string op) ∷ ("sort" , string (sortName is))
           ∷ ("shape" , shape (shapeOf is)) ∷ fields)

  sp-fields : S × S → List (String × JSON) → List (String × JSON)
  sp-fields (s , p) fs = ("s" , shape s) ∷ ("p" , shape p) ∷ fs

  bopName : Bop → String
  bopName plus = "plus"
  bopName mul  = "mul"
  bopName max  = "max"

expr : E Γ is → JSON
expr {is = is} (var v) = node "var" is (("idx" , nat (index v)) ∷ [])
expr {is = is} zero = node "zero" is []
expr {is = is} one  = node "one" is []
expr {is = is} (imaps e) =
  node "imaps" is (("s" , shape (bound e)) ∷ ("body" , expr e) ∷ [])
expr {is = is} (sels a i) =
  node "sels" is (("a" , expr a) ∷ ("i" , expr i) ∷ [])
expr {is = is} (imap e) =
  node "imap" is (("s" , shape (bound e)) ∷ ("body" , expr e) ∷ [])
expr {is = is} (sel a i) =
  node "sel" is (("a" , expr a) ∷ ("i" , expr i) ∷ [])
expr {is = is} (imapb m e) =
  node "imapb" is (sp-fields (*-shapes m) (("body" , expr e) ∷ []))
expr {is = is} (selb m a i) =
  node "selb" is (sp-fields (*-shapes m) (("a" , expr a) ∷ ("i" , expr i) ∷ []))
expr {is = is} (sum e) =
  node "sum" is (("s" , shape (bound e)) ∷ ("body" , expr e) ∷ [])
expr {is = is} (zero-but i j a) =
  node "zero_but" is (("i" , expr i) ∷ ("j" , expr j) ∷ ("a" , expr a) ∷ [])
expr {is = is} (slide i sp a su) =
  node "slide" is (sp-fields (+-shapes sp) (("i" , expr i) ∷ ("a" , expr a) ∷ []))
expr {is = is} (backslide i a su sp) =
  node "backslide" is (sp-fields (+-shapes sp) (("i" , expr i) ∷ ("a" , expr a) ∷ []))
expr {is = is} (un f a) = node (fn-name f) is (("a" , expr a) ∷ [])   -- "logistic", "exp", ...
expr {is = is} (bin op a b) =
  node "bin" is (("fn" , string (bopName op)) ∷ ("a" , expr a) ∷ ("b" , expr b) ∷ [])
expr {is = is} (scaledown n a) =
  node "scaledown" is (("n" , nat n) ∷ ("a" , expr a) ∷ [])
expr {is = is} (minus a) = node "minus" is (("a" , expr a) ∷ [])
expr {is = is} (ix-const i) = node "ix_const" is (("pos" , pos i) ∷ [])
expr {is = is} (div m i) =
  node "div" is (sp-fields (*-shapes m) (("i" , expr i) ∷ []))
expr {is = is} (mod m i) =
  node "mod" is (sp-fields (*-shapes m) (("i" , expr i) ∷ []))
expr {is = is} (ix-plus i j su sp) =
  node "ix_plus" is (sp-fields (+-shapes sp) (("i" , expr i) ∷ ("j" , expr j) ∷ []))
expr {is = is} (argmax w e) =
  node "argmax" is (("s" , shape (bound e)) ∷ ("body" , expr e) ∷ [])
expr {is = is} (ix-minus i j sp su e) =
  node "ix_minus" is
    (sp-fields (+-shapes sp) (("i" , expr i) ∷ ("j" , expr j) ∷ ("body" , expr e) ∷ []))
expr {is = is} (ix-minusᵣ i j sp su e) =
  node "ix_minus_r" is
    (sp-fields (+-shapes sp) (("i" , expr i) ∷ ("j" , expr j) ∷ ("body" , expr e) ∷ []))

------------------------------------------------------------------------
-- Examples

_ : render (expr {Γ = ε ▹ ar (ι 5)} {is = ar unit} (Sum λ i → sels (var v₁) i))
  ≡ "{\"op\":\"sum\",\"sort\":\"ar\",\"shape\":1,\"s\":5,\"body\":\
    \{\"op\":\"sels\",\"sort\":\"ar\",\"shape\":1,\
    \\"a\":{\"op\":\"var\",\"sort\":\"ar\",\"shape\":5,\"idx\":1},\
    \\"i\":{\"op\":\"var\",\"sort\":\"ix\",\"shape\":5,\"idx\":0}}}"
_ = refl

_ : render (expr {Γ = ε ▹ ar (ι 4 ⊗ ι 6) ▹ ix (ι 2 ⊗ ι 3)} {is = ar (ι 2 ⊗ ι 2)}
                 (selb (ι ⊗ ι) (var v₁) (var v₀)))
  ≡ "{\"op\":\"selb\",\"sort\":\"ar\",\"shape\":[2,2],\"s\":[2,3],\"p\":[2,2],\
    \\"a\":{\"op\":\"var\",\"sort\":\"ar\",\"shape\":[4,6],\"idx\":1},\
    \\"i\":{\"op\":\"var\",\"sort\":\"ix\",\"shape\":[2,3],\"idx\":0}}"
_ = refl

_ : render (expr {Γ = ε} {is = ix (ι 5 ⊗ ι 5)}
                 (ix-const (ι (F.suc (F.suc F.zero)) ⊗ ι F.zero)))
  ≡ "{\"op\":\"ix_const\",\"sort\":\"ix\",\"shape\":[5,5],\"pos\":[2,0]}"
_ = refl

-- an elementwise function prints as its own op
_ : render (expr {Γ = ε ▹ ar (ι 3)} {is = ar (ι 3)} (un Fn.exp (var v₀)))
  ≡ "{\"op\":\"exp\",\"sort\":\"ar\",\"shape\":3,\
    \\"a\":{\"op\":\"var\",\"sort\":\"ar\",\"shape\":3,\"idx\":0}}"
_ = refl
