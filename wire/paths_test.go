package wire

import "testing"

func TestPathFillsParametersInOrderEscaped(t *testing.T) {
	for _, tc := range []struct {
		pattern string
		args    []string
		want    string
	}{
		{PathExecutionStatus, []string{"E_01KBNJ2T3D8W7H3X6Q4M9R5V1A"}, "/v1/executions/E_01KBNJ2T3D8W7H3X6Q4M9R5V1A/status"},
		{PathExecution, []string{"E_x.g:1_2"}, "/v1/executions/E_x.g:1_2"},
		{PathComponentWit, []string{"a/b c"}, "/v1/components/a%2Fb%20c/wit"},
		{PathWorkerAppend, nil, "/v1/worker/append"},
		{PathDeployment, nil, "/v1/deployments/{deployment_id}"},
	} {
		if got := Path(tc.pattern, tc.args...); got != tc.want {
			t.Errorf("Path(%q, %q) = %q, want %q", tc.pattern, tc.args, got, tc.want)
		}
	}
}
