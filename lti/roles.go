package lti

import "strings"

// instructorRoles are the roles (LIS vocabulary, LTI 1.3 Core §A.2) that
// make a launch's user an instructor: in the course (context roles,
// sub-roles such as Instructor#TeachingAssistant included), or an
// administrator of the institution or system.
var instructorRoles = []string{
	"http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor",
	"http://purl.imsglobal.org/vocab/lis/v2/membership#Administrator",
	"http://purl.imsglobal.org/vocab/lis/v2/membership#ContentDeveloper",
	"http://purl.imsglobal.org/vocab/lis/v2/membership/Instructor#",
	"http://purl.imsglobal.org/vocab/lis/v2/institution/person#Administrator",
	"http://purl.imsglobal.org/vocab/lis/v2/system/person#Administrator",
	"http://purl.imsglobal.org/vocab/lis/v2/system/person#SysAdmin",
}

// IsInstructor reports whether any of roles is an instructor's (see
// instructorRoles; the short context role names "Instructor" and
// "Administrator" that some platforms still send count too).
func IsInstructor(roles []string) bool {
	for _, r := range roles {
		if r == "Instructor" || r == "Administrator" {
			return true
		}
		for _, ir := range instructorRoles {
			if r == ir || strings.HasSuffix(ir, "#") && strings.HasPrefix(r, ir) {
				return true
			}
		}
	}
	return false
}
