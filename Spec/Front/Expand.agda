{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- From what the user wrote to a core term: names become de Bruijn
-- indices, `a - b` becomes a + (−b), operations written as calls
-- become their nodes, and layers are expanded (Spec.Front.Layers) once
-- the shapes of their arguments are inferred (Spec.Front.Check).
--
-- The scope lists the names of the context's variables, innermost
-- first; a derivative placeholder of the chain has the empty name,
-- which no one can write, so a binding never mentions one.
--
--   for i : 10 . a[i] - b[i]   (scope b, a)
--   ↦ For 10 (Add (Sel (V 2) (V 0)) (Neg (Sel (V 1) (V 0))))
------------------------------------------------------------------------
module Spec.Front.Expand where

open import Data.Bool using (true; false; not; if_then_else_)
open import Data.List as List using (List; []; _∷_)
open import Data.Maybe using (Maybe; just; nothing)
open import Data.Nat using (ℕ; zero; suc)
open import Data.Nat.Show using () renaming (show to showℕ)
open import Data.Product using (_,_)
open import Data.String as String using (String; _++_)

open import Spec.Array.Base using (S)
open import Spec.Lang.Syntax using (Ctx; _▹_; ix; Fn; fn-name; fns)
open import Spec.Front.Syntax
open import Spec.Front.Term
open import Spec.Front.Result
open import Spec.Front.Shape using (show)
open import Spec.Front.Check using (infer)
open import Spec.Front.Layers using (Arg; expr; nat; layer; layer-names)

Scope : Set
Scope = List String

private
  -- The index of the innermost variable of that name.
  resolve : Scope → String → Maybe ℕ
  resolve []       x = nothing
  resolve (y ∷ ys) x = if x String.== y then just 0 else Data.Maybe.map suc (resolve ys x)
    where import Data.Maybe

  visible : Scope → String
  visible sc = String.intersperse ", " (List.reverse (List.boolFilter (λ x → not (x String.== "")) sc))

  argName : ℕ → Raw → String
  argName k (name x) = x
  argName k _        = "(argument " ++ showℕ k ++ ")"

operations : List String
operations = List.map fn-name fns
  List.++ "max" ∷ "slide" ∷ "backslide" ∷ "block" ∷ "zerobut" ∷ "div" ∷ "mod" ∷ layer-names

expand : (Γ : Ctx) → Scope → Raw → Result Tm
expand-args : (Γ : Ctx) → Scope → ℕ → List Raw → Result (List Arg)
builtin : (Γ : Ctx) → Scope → String → List Raw → Result Tm
block-shape : String → List Raw → Result S

expand Γ sc (name x) with resolve sc x
... | just n  = ok (V n)
... | nothing = fail ("unknown name " ++ x ++ "; in scope: " ++ visible sc)
expand Γ sc (num zero)          = ok Zero
expand Γ sc (num (suc zero))    = ok One
expand Γ sc (num n)             =
  fail ("the number " ++ showℕ n ++ " is not an array (only 0 and 1 are; divide with / n)")
expand Γ sc (shape s)           = fail ("the shape " ++ show s ++ " is not an array")
expand Γ sc (bind for i s b)    = expand (Γ ▹ ix s) (i ∷ sc) b >>= λ t → ok (For s t)
expand Γ sc (bind sum i s b)    = expand (Γ ▹ ix s) (i ∷ sc) b >>= λ t → ok (Sum s t)
expand Γ sc (bind tile i s b)   = expand (Γ ▹ ix s) (i ∷ sc) b >>= λ t → ok (Tile s t)
expand Γ sc (bind maxr i s b)   = expand (Γ ▹ ix s) (i ∷ sc) b >>= λ t → ok (MaxOver s t)
expand Γ sc (sel a (num n)) =
  fail ("[" ++ showℕ n ++ "]: an index is an index variable (the i of for i : S . a[i]), "
        ++ "not a number")
expand Γ sc (sel a i)   = expand Γ sc a >>= λ a′ → expand Γ sc i >>= λ i′ → ok (Sel a′ i′)
expand Γ sc (add a b)   = expand Γ sc a >>= λ a′ → expand Γ sc b >>= λ b′ → ok (Add a′ b′)
expand Γ sc (sub a b)   = expand Γ sc a >>= λ a′ → expand Γ sc b >>= λ b′ → ok (Add a′ (Neg b′))
expand Γ sc (mul a b)   = expand Γ sc a >>= λ a′ → expand Γ sc b >>= λ b′ → ok (Mul a′ b′)
expand Γ sc (neg a)     = expand Γ sc a >>= λ a′ → ok (Neg a′)
expand Γ sc (scale n a) = expand Γ sc a >>= λ a′ → ok (Scale n a′)
expand Γ sc (call f as) with layer f
... | just L  = expand-args Γ sc 1 as >>= L
... | nothing = builtin Γ sc f as

expand-args Γ sc k [] = ok []
expand-args Γ sc k (num n ∷ as) = expand-args Γ sc (suc k) as >>= λ rest → ok (nat n (showℕ n) ∷ rest)
expand-args Γ sc k (a ∷ as) = do
  t ← expand Γ sc a
  (is , _) ← infer Γ t
  rest ← expand-args Γ sc (suc k) as
  ok (expr t is (argName k a) ∷ rest)

builtin Γ sc "logistic" (a ∷ []) = expand Γ sc a >>= λ a′ → ok (Un Fn.logistic a′)
builtin Γ sc "exp"      (a ∷ []) = expand Γ sc a >>= λ a′ → ok (Un Fn.exp a′)
builtin Γ sc "log"      (a ∷ []) = expand Γ sc a >>= λ a′ → ok (Un Fn.log a′)
builtin Γ sc "recip"    (a ∷ []) = expand Γ sc a >>= λ a′ → ok (Un Fn.recip a′)
builtin Γ sc "sqrt"     (a ∷ []) = expand Γ sc a >>= λ a′ → ok (Un Fn.sqrt a′)
builtin Γ sc "relu"     (a ∷ []) = expand Γ sc a >>= λ a′ → ok (Un Fn.relu a′)
builtin Γ sc "step"     (a ∷ []) = expand Γ sc a >>= λ a′ → ok (Un Fn.step a′)
builtin Γ sc "detach"   (a ∷ []) = expand Γ sc a >>= λ a′ → ok (Un Fn.detach a′)
builtin Γ sc "erf"      (a ∷ []) = expand Γ sc a >>= λ a′ → ok (Un Fn.erf a′)
builtin Γ sc "derf"     (a ∷ []) = expand Γ sc a >>= λ a′ → ok (Un Fn.derf a′)
builtin Γ sc "max" (a ∷ b ∷ []) =
  expand Γ sc a >>= λ a′ → expand Γ sc b >>= λ b′ → ok (Max a′ b′)
builtin Γ sc "slide" (a ∷ i ∷ []) =
  expand Γ sc a >>= λ a′ → expand Γ sc i >>= λ i′ → ok (Slide i′ a′)
builtin Γ sc "backslide" (a ∷ i ∷ []) =
  expand Γ sc a >>= λ a′ → expand Γ sc i >>= λ i′ → ok (Backslide i′ a′)
builtin Γ sc "block" (a ∷ i ∷ []) =
  expand Γ sc a >>= λ a′ → expand Γ sc i >>= λ i′ → ok (Block a′ i′)
builtin Γ sc "zerobut" (i ∷ j ∷ a ∷ []) =
  expand Γ sc i >>= λ i′ → expand Γ sc j >>= λ j′ → expand Γ sc a >>= λ a′ → ok (ZeroBut i′ j′ a′)
builtin Γ sc "div" (i ∷ p ∷ []) =
  expand Γ sc i >>= λ i′ → block-shape "div" (p ∷ []) >>= λ s → ok (Div s i′)
builtin Γ sc "mod" (i ∷ p ∷ []) =
  expand Γ sc i >>= λ i′ → block-shape "mod" (p ∷ []) >>= λ s → ok (Mod s i′)
builtin Γ sc f as with List.any (f String.==_) operations
... | true  = fail (f ++ ": wrong number of arguments (" ++ showℕ (List.length as) ++ ")")
... | false = fail ("unknown operation " ++ f ++ "; known: " ++ String.intersperse ", " operations)

block-shape f (shape s ∷ [])          = ok s
block-shape f (num n ∷ [])            = ok (Spec.Array.Base.ι n)
  where import Spec.Array.Base
block-shape f _ = fail (f ++ ": the second argument must be a shape, such as 2x2")
