package stelacdk

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// WorkerURLFunctions are the functions that also get a Lambda function URL
// with IAM auth: the worker write and lock routes, the bulk of the requests
// (every lock, append, child submission and response). A request through a
// function URL costs only the Lambda request ($0.20 per million), not the
// HTTP API's $1.00 per million; callers sign it with SigV4 for service
// "lambda" (client.WithFunctionURLs) and need lambda:InvokeFunctionUrl on
// the function (an IAM grant of their own, like execute-api:Invoke for the
// API). The routes stay on the HTTP API too; the public routes and the
// worker reads served by `api` are only there. See docs/deploy.md.
var WorkerURLFunctions = []string{"lock", "append"}

// newWorkerURLs adds the function URLs of WorkerURLFunctions and their
// outputs (LockFunctionUrl, AppendFunctionUrl).
func (s *Stela) newWorkerURLs(scope constructs.Construct) {
	s.WorkerURLs = map[string]awslambda.FunctionUrl{}
	for _, name := range WorkerURLFunctions {
		u := s.Functions[name].AddFunctionUrl(&awslambda.FunctionUrlOptions{AuthType: awslambda.FunctionUrlAuthType_AWS_IAM})
		s.WorkerURLs[name] = u
		awscdk.NewCfnOutput(scope, jsii.String(functionID(name)+"Url"), &awscdk.CfnOutputProps{
			Description: jsii.String("Function URL (IAM auth, SigV4 service lambda) of the " + name + " worker routes"),
			Value:       u.Url(),
		})
	}
}
