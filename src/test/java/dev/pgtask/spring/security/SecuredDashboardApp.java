package dev.pgtask.spring.security;

import dev.pgtask.dashboard.DashboardAccess;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.security.config.Customizer;
import org.springframework.security.config.annotation.web.builders.HttpSecurity;
import org.springframework.security.core.Authentication;
import org.springframework.security.core.userdetails.User;
import org.springframework.security.provisioning.InMemoryUserDetailsManager;
import org.springframework.security.web.SecurityFilterChain;

/**
 * An application that mounts the dashboard under {@code /ops/pgtask} and guards it with Spring
 * Security, as docs/dashboard.md ("In Spring Boot", "Behind Spring Security") tells: HTTP Basic, the
 * role {@code OPS} to reach the dashboard's path, Spring's CSRF filter not applied to that path (the
 * dashboard checks its own token on every POST), and a {@link DashboardAccess} that allows the
 * actions to users with the role {@code ADMIN}. Users: {@code admin} (OPS, ADMIN), {@code viewer}
 * (OPS), {@code guest} (no role). The beans are those of the docs' snippet, word for word.
 */
@Configuration(proxyBeanMethods = false)
@EnableAutoConfiguration
class SecuredDashboardApp {

  @Bean
  SecurityFilterChain security(HttpSecurity http) throws Exception {
    http.authorizeHttpRequests(requests -> requests
            .requestMatchers("/ops/pgtask/**").hasRole("OPS")
            .anyRequest().authenticated())
        .httpBasic(Customizer.withDefaults())
        // the dashboard checks its own CSRF token (cookie and form field) on every POST
        .csrf(csrf -> csrf.ignoringRequestMatchers("/ops/pgtask/**"));
    return http.build();
  }

  @Bean
  DashboardAccess dashboardAccess() {
    return (request, action) -> request.principal() instanceof Authentication user
        && user.getAuthorities().stream().anyMatch(a -> a.getAuthority().equals("ROLE_ADMIN"));
  }

  @Bean
  InMemoryUserDetailsManager users() {
    return new InMemoryUserDetailsManager(
        User.withUsername("admin").password("{noop}" + DashboardSecurityMountTest.PASSWORD).roles("OPS", "ADMIN").build(),
        User.withUsername("viewer").password("{noop}" + DashboardSecurityMountTest.PASSWORD).roles("OPS").build(),
        User.withUsername("guest").password("{noop}" + DashboardSecurityMountTest.PASSWORD).roles().build());
  }
}
