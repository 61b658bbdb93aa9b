package stelacdk

import "testing"

// The lock and append functions have an IAM-authorised function URL each,
// named in the outputs; no other function has one (the public routes stay
// behind API Gateway's authorizer and throttling).
func TestWorkerFunctionsHaveIAMFunctionURLs(t *testing.T) {
	for name, stack := range map[string]tmpl{"iam": iamStack, "jwt": jwtStack} {
		urls := stack.resources("AWS::Lambda::Url")
		if len(urls) != len(WorkerURLFunctions) {
			t.Fatalf("%s: %d function URLs, want %d", name, len(urls), len(WorkerURLFunctions))
		}
		outs := stack["Outputs"].(map[string]any)
		for _, fn := range WorkerURLFunctions {
			f := stack.function(t, fn)
			var found *resource
			for i, u := range urls {
				if refersTo(u.Props["TargetFunctionArn"], f.ID) {
					found = &urls[i]
				}
			}
			if found == nil {
				t.Fatalf("%s: no function URL targets %s", name, fn)
			}
			if found.Props["AuthType"] != "AWS_IAM" {
				t.Errorf("%s: the %s function URL has auth %v, want AWS_IAM", name, fn, found.Props["AuthType"])
			}
			out, ok := outs[functionID(fn)+"Url"].(map[string]any)
			if !ok || !refersTo(out["Value"], found.ID) {
				t.Errorf("%s: output %sUrl = %v, want the URL of %s", name, functionID(fn), out, found.ID)
			}
		}
		// An IAM function URL gets no public invoke permission.
		for _, p := range stack.resources("AWS::Lambda::Permission") {
			if p.Props["FunctionUrlAuthType"] != nil && p.Props["Principal"] == "*" {
				t.Errorf("%s: public function URL permission %s", name, p.ID)
			}
		}
	}
}
