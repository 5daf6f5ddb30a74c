package spec

import (
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

var variableSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "type"}, {Name: "default"}, {Name: "description"}},
}

// decodeVariable returns the variable's value: --var, then the
// environment, then the default. A variable that failed to decode is
// cty.DynamicVal so that its uses raise no further errors.
func (l *loader) decodeVariable(blk *hcl.Block) cty.Value {
	name := blk.Labels[0]
	if !hclsyntax.ValidIdentifier(name) {
		l.errorf(blk.LabelRanges[0], "Invalid variable name", "%q is not a valid identifier: use letters, digits, '_' and '-', starting with a letter.", name)
		return cty.DynamicVal
	}
	content, d := blk.Body.Content(variableSchema)
	l.diags = append(l.diags, d...)
	if d.HasErrors() {
		return cty.DynamicVal
	}
	ty := cty.DynamicPseudoType
	if a, ok := content.Attributes["type"]; ok {
		t, d := typeexprConstraint(a.Expr)
		l.diags = append(l.diags, d...)
		if d.HasErrors() {
			return cty.DynamicVal
		}
		ty = t
	}
	if a, ok := content.Attributes["description"]; ok {
		v, d := a.Expr.Value(nil)
		l.diags = append(l.diags, d...)
		if !d.HasErrors() && (v.IsNull() || !v.Type().Equals(cty.String)) {
			l.errorf(a.Expr.Range(), "Invalid description", "A variable's description must be a string.")
		}
	}

	if s, ok := l.opts.vars[name]; ok {
		l.usedVars[name] = true
		return l.varFromString(blk, ty, s, "--var "+name)
	}
	if s, ok := l.opts.env(EnvPrefix + name); ok {
		return l.varFromString(blk, ty, s, EnvPrefix+name)
	}
	a, ok := content.Attributes["default"]
	if !ok {
		l.errorf(blk.DefRange, "Variable has no value", "Variable %q has no default: set it with --var %s=VALUE or %s%s=VALUE.", name, name, EnvPrefix, name)
		return cty.DynamicVal
	}
	v, d := a.Expr.Value(&hcl.EvalContext{Functions: functions})
	l.diags = append(l.diags, d...)
	if d.HasErrors() {
		return cty.DynamicVal
	}
	cv, err := convert.Convert(v, ty)
	if err != nil {
		l.errorf(a.Expr.Range(), "Invalid default value", "The default of variable %q does not match its type %s: %v.", name, ty.FriendlyName(), err)
		return cty.DynamicVal
	}
	return cv
}

// varFromString turns a --var or environment value into the variable's
// type: as is for strings, parsed as an HCL expression otherwise.
func (l *loader) varFromString(blk *hcl.Block, ty cty.Type, s, from string) cty.Value {
	if ty == cty.String || ty == cty.DynamicPseudoType {
		return cty.StringVal(s)
	}
	expr, d := hclsyntax.ParseExpression([]byte(s), from, hcl.InitialPos)
	var v cty.Value
	if !d.HasErrors() {
		v, d = expr.Value(&hcl.EvalContext{Functions: functions})
	}
	if d.HasErrors() {
		l.errorf(blk.DefRange, "Invalid variable value", "The value of %s is not a valid %s: %s.", from, ty.FriendlyName(), d.Error())
		return cty.DynamicVal
	}
	cv, err := convert.Convert(v, ty)
	if err != nil {
		l.errorf(blk.DefRange, "Invalid variable value", "The value of %s is not a valid %s: %v.", from, ty.FriendlyName(), err)
		return cty.DynamicVal
	}
	return cv
}
