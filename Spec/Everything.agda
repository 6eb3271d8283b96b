{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- Every checked module of the specification; `make proofs` checks this.
-- (Spec.Main, the executable entry point, is not --safe and is checked
-- by `make dump`, which compiles it.)
------------------------------------------------------------------------
module Spec.Everything where

import Spec.Array.Base
import Spec.Array.Index
import Spec.Array.Slide
import Spec.Array.Block
import Spec.Scalar
import Spec.Scalar.Float
import Spec.CNN.Array
import Spec.Lang.Syntax
import Spec.Lang.Subst
import Spec.Lang.Eval
import Spec.Dump.JSON
import Spec.Dump.Expr
import Spec.Model.CNN
import Spec.Lang.AD
import Spec.CNN.Array.Examples
import Spec.Lang.Opt
import Spec.Lang.Chain
import Spec.Array.Reshape
import Spec.Array.Reshape.Properties
import Spec.Lang.Examples
import Spec.Array.Index.Properties
import Spec.Array.Block.Properties
import Spec.Array.Slide.Properties
import Spec.Scalar.Laws
import Spec.Proofs.Sum
import Spec.Proofs.Val
import Spec.Proofs.Ren
import Spec.Proofs.Sub
import Spec.Proofs.Opt.Sel
import Spec.Proofs.Opt.Sum
import Spec.Theorems
import Spec.Model.Dot
import Spec.Model.ChainExample
import Spec.Model.Ops
import Spec.Dump.Model
import Spec.Array.Properties
import Spec.Array.Argmax
import Spec.Array.Argmax.Properties
import Spec.Proofs.Opt.Fold
import Spec.Proofs.Opt.SumZb
import Spec.Proofs.Opt.Main
import Spec.Proofs.Opt
import Spec.Proofs.SumBlock
import Spec.Proofs.Forward
import Spec.Proofs.AD.Env
import Spec.Proofs.AD
import Spec.Proofs.Forward.Subst
import Spec.Proofs.Chain.Typed
import Spec.Proofs.Chain.Inline
import Spec.Proofs.Chain.OneHot
import Spec.Proofs.Chain
import Spec.Proofs.Chain.Example
import Spec.Proofs.Chain.Local
import Spec.Proofs.Chain.Build
import Spec.Proofs.Chain.Dump
import Spec.Proofs.Chain.Models
import Spec.Proofs.CNN
import Spec.Front.Shape
import Spec.Front.Result
import Spec.Front.Term
import Spec.Front.Check
import Spec.Front.Literal
import Spec.Front.Syntax
import Spec.Front.Lexer
import Spec.Front.Parser
import Spec.Front.Layers
import Spec.Front.Expand
import Spec.Front.Model
import Spec.Front.Properties
import Spec.Front.Examples
import Spec.Lang.Unren
import Spec.Lang.Chain.Clean
import Spec.Model.PF
import Spec.Scalar.Derivatives
import Spec.Scalar.Dual
import Spec.Proofs.Dual
import Spec.Scalar.Int
import Spec.Scalar.Rational
import Spec.Theorems.Instances
