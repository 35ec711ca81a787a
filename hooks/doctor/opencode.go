package doctor

import (
	"strings"

	"github.com/git-lossless/git-lossless/hooks/opencode"
)

// checkOpencode checks git-lossless's opencode plugin where it is
// installed (user, project): the program it runs exists and is
// executable, and the file is what this version's install writes. No
// line when no plugin is installed: opencode is optional.
func checkOpencode(opt Options) []Check {
	const name = "opencode plugin"
	ins, err := opencode.Inspect(opt.Dir, opt.Getenv)
	if err != nil && len(ins) == 0 {
		return []Check{warnCheck(name, "cannot read the plugin directories: "+err.Error(), "check the permissions of ~/.config/opencode and .opencode")}
	}
	if len(ins) == 0 {
		return nil
	}
	detail, problems := opencode.DoctorDetail(ins)
	if len(problems) > 0 {
		return []Check{failCheck(name, strings.Join(problems, "; "), "run `git lossless install opencode --scope "+string(ins[0].Scope)+" --apply` with the git-lossless you mean to keep")}
	}
	return []Check{okCheck(name, detail)}
}
