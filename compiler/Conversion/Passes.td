// Conversions between hybridc's dialects, alphabetical.
#ifndef HYBRIDC_CONVERSION_PASSES_TD
#define HYBRIDC_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertHgToHrt : Pass<"convert-hg-to-hrt", "mlir::ModuleOp"> {
  let summary = "Lower each hg function to an hrt executable";
  let description = [{
    Every func.func of hg ops becomes an `hrt.executable` of the same name:
    arguments tagged `hg.param` become `hrt.param` (one per checkpoint name,
    however often the function names it), other arguments `hrt.input` ports,
    each returned value an `hrt.output` port. Every hg op becomes one command
    writing a fresh `hrt.alloc` (or, when its value is returned, the output
    port itself); hg.reshape becomes `hrt.view` and hg.constant
    `hrt.constant`. Returned inputs, parameters, constants, views and values
    returned twice are copied into their ports. Attributes are written out in
    full, with hg's ODS defaults where the hg op leaves them unset. Symbols
    come from the arguments' `hg.dims`, their limits from the function's
    `hg.dim_max`. Fails, naming the op, when a shape is not a polynomial in
    the symbols. A state or parameter a function writes back is computed
    straight into its buffer when nothing reads the old value after the op
    that computes it (an optimizer step's moments, masters and working
    weights), else copied there at the end; `params-in-place=false` keeps
    the copy for parameters (ZeRO: the partition turns that copy into the
    gather of a sharded update into the replicated weights).
  }];
  let options = [
    Option<"paramsInPlace", "params-in-place", "bool", /*default=*/"true",
           "Compute a written-back parameter in its own buffer where the "
           "old value is not read afterwards">,
  ];
  let dependentDialects = ["::hybridc::hrt::HrtDialect"];
}

#endif // HYBRIDC_CONVERSION_PASSES_TD
